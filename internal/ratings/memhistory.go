package ratings

import (
	"context"
	"math"
	"slices"
	"sync"
)

// History implements Store.History. It holds the read lock throughout.
func (s *MemoryStore) History(ctx context.Context, gameType string, fn func(Result) error) error {
	gc, err := NewContext(gameType, nil)
	if err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, m := range s.history[gc.GameType] {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(cloneResult(m.result)); err != nil {
			return err
		}
	}
	return nil
}

// Tunings implements Store.Tunings.
func (s *MemoryStore) Tunings(ctx context.Context, gameType string) (map[string]Tuning, error) {
	gc, err := NewContext(gameType, nil)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]Tuning)
	for k, t := range s.tunings {
		if t.Context.GameType == gc.GameType {
			t.Context.Mutators = slices.Clone(t.Context.Mutators)
			out[k] = t
		}
	}
	return out, ctx.Err()
}

// SaveTunings implements Store.SaveTunings.
func (s *MemoryStore) SaveTunings(ctx context.Context, gameType string, ts []Tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	gc, err := NewContext(gameType, nil)
	if err != nil {
		return err
	}
	if err := CheckTunings(gc.GameType, ts); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.tunings {
		if t.Context.GameType == gc.GameType {
			delete(s.tunings, k)
		}
	}
	for _, t := range ts {
		t.Context.Mutators = slices.Clone(t.Context.Mutators)
		s.tunings[t.Context.Key()] = t
	}
	return nil
}

// Rebuild implements Store.Rebuild. It holds the store's lock throughout, so it holds off
// every result (not only those of gameType) and every read.
func (s *MemoryStore) Rebuild(ctx context.Context, gameType string, replay ReplayFunc, progress func(Progress)) (RebuildReport, error) {
	if err := ctx.Err(); err != nil {
		return RebuildReport{}, err
	}
	gc, err := NewContext(gameType, nil)
	if err != nil {
		return RebuildReport{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rebuild(gc.GameType, replay, progress, nil)
}

// StoredResult implements Store.StoredResult.
func (s *MemoryStore) StoredResult(ctx context.Context, matchID string) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.matches[matchID]
	if !ok {
		return Result{}, ResultNotFoundError(matchID)
	}
	return cloneResult(m.result), nil
}

// DeleteResult implements Store.DeleteResult. Like Rebuild it holds the store's lock
// throughout; the result is forgotten only once the rebuild without it has succeeded.
func (s *MemoryStore) DeleteResult(ctx context.Context, matchID, gameType string, replay ReplayFunc, progress func(Progress)) (RebuildReport, error) {
	if err := ctx.Err(); err != nil {
		return RebuildReport{}, err
	}
	gc, err := NewContext(gameType, nil)
	if err != nil {
		return RebuildReport{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.matches[matchID]
	if !ok || m.ctx.GameType != gc.GameType {
		return RebuildReport{}, ResultNotFoundError(matchID)
	}
	rep, err := s.rebuild(gc.GameType, replay, progress, m)
	if err != nil {
		return RebuildReport{}, err
	}
	delete(s.matches, matchID)
	s.history[gc.GameType] = slices.DeleteFunc(s.history[gc.GameType], func(h *memMatch) bool { return h == m })
	return rep, nil
}

// rebuild is Rebuild under the store's lock, replaying the history of gameType (canonical)
// without skip (nil: the whole history).
func (s *MemoryStore) rebuild(gameType string, replay ReplayFunc, progress func(Progress), skip *memMatch) (RebuildReport, error) {
	tell := func(phase string, done, total int) {
		if progress != nil {
			progress(Progress{Phase: phase, Done: done, Total: total})
		}
	}
	ms := s.history[gameType]
	if skip != nil {
		ms = slices.DeleteFunc(slices.Clone(ms), func(m *memMatch) bool { return m == skip })
	}
	tell("replaying", 0, len(ms))
	var seasons []Season
	for _, list := range s.seasons {
		for _, se := range list {
			if se.Context.GameType == gameType {
				seasons = append(seasons, *se)
			}
		}
	}
	states, resets, err := ReplayWithResets(s.policy.Clone(), replay, nil, seasons, -1, math.MaxInt64, func(yield func(int64, Result) bool) {
		for _, m := range ms {
			if !yield(m.seq, cloneResult(m.result)) {
				return
			}
		}
	})
	if err != nil {
		return RebuildReport{}, err
	}
	tell("replaying", len(ms), len(ms))
	fresh, rep, err := RebuildContexts(gameType, states)
	if err != nil {
		return RebuildReport{}, err
	}
	rep.Results = len(ms)

	tell("writing", 0, rep.Ratings)
	for key, mc := range s.contexts {
		if mc.ctx.GameType == gameType {
			delete(s.contexts, key)
		}
	}
	for _, st := range fresh {
		mc := &memContext{ctx: st.Context, ratings: make(map[Participant]Rating, len(st.State.Ratings)), bias: make(map[sidePair]*BiasTable)}
		for p, rt := range st.State.Ratings {
			mc.ratings[p] = rt
		}
		for _, e := range st.State.Bias.Entries() {
			pair := sidePair{e.Key.SideA, e.Key.SideB}
			t := mc.bias[pair]
			if t == nil {
				t = &BiasTable{}
				mc.bias[pair] = t
			}
			t.Record(e)
		}
		// The pairs' totals as the replay summed them, result by result: what recording the
		// same results one at a time would have left (adding the cells together instead
		// could differ in the last bits of the terms).
		for _, k := range st.State.Bias.Pairs() {
			if t := mc.bias[sidePair{k.SideA, k.SideB}]; t != nil {
				_ = t.SetTotal(k, st.State.Bias.Total(k)) // checked by RebuildContexts
			}
		}
		s.contexts[st.Context.Key()] = mc
	}
	for _, se := range resets {
		if stored := s.findSeason(se.Context, se.Name); stored != nil {
			stored.ResetMean, stored.ResetAltMean = se.ResetMean, se.ResetAltMean
		}
	}
	tell("writing", rep.Ratings, rep.Ratings)
	return rep, nil
}

// ResultCounts implements AutoTuneStore.ResultCounts.
func (s *MemoryStore) ResultCounts(ctx context.Context, gameType string) (map[string]int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]int{}
	for game, ms := range s.history {
		if gameType != "" && game != fold(gameType) {
			continue
		}
		for _, m := range ms {
			out[m.ctxKey]++
		}
	}
	return out, ctx.Err()
}

// ClaimTune implements AutoTuneStore.ClaimTune, for the callers of one process.
func (s *MemoryStore) ClaimTune(ctx context.Context, key string) (func(), bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tuneClaims[key] {
		return nil, false, nil
	}
	if s.tuneClaims == nil {
		s.tuneClaims = map[string]bool{}
	}
	s.tuneClaims[key] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.tuneClaims, key)
		})
	}, true, nil
}

// SaveTuning implements AutoTuneStore.SaveTuning.
func (s *MemoryStore) SaveTuning(ctx context.Context, t Tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckTunings(t.Context.GameType, []Tuning{t}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Context.Mutators = slices.Clone(t.Context.Mutators)
	s.tunings[t.Context.Key()] = t
	return nil
}
