package ratings

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// MemoryStore is the Store kept in the process: the embedded default when no database is
// configured. Everything it knows is lost when the process exits.
//
// One RWMutex guards it: results, mutator changes and rebuilds take it exclusively (so they
// are applied one at a time, in the order they took the lock, which is the order a rebuild
// replays them in), reads share it. The ApplyFunc, ReplayFunc and progress callbacks run under
// the lock and must not call back into the store.
type MemoryStore struct {
	mu       sync.RWMutex
	policy   *MutatorPolicy
	contexts map[string]*memContext // by Context.Key
	matches  map[string]*memMatch   // by match id
	history  map[string][]*memMatch // by game type, in the order accepted
	tunings  map[string]Tuning      // by Context.Key
}

// memContext is what the store knows of one rating context.
type memContext struct {
	ctx     Context
	ratings map[Participant]Rating
	bias    map[sidePair]*BiasTable // one table per side pair, as RecordResult hands them out
}

// sidePair is the part of a BiasKey that a result's bias table is read by.
type sidePair struct{ a, b string }

// memMatch is one stored result.
type memMatch struct {
	result   Result // a private deep copy
	ctxKey   string
	ctx      Context
	hash     [32]byte
	response []byte
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store whose mutator policy starts as a copy of policy (nil
// knows no mutator).
func NewMemoryStore(policy *MutatorPolicy) *MemoryStore {
	return &MemoryStore{
		policy:   policy.Clone(),
		contexts: make(map[string]*memContext),
		matches:  make(map[string]*memMatch),
		history:  make(map[string][]*memMatch),
		tunings:  make(map[string]Tuning),
	}
}

// Name is "memory".
func (s *MemoryStore) Name() string { return "memory" }

// Ping always succeeds: the store is the process.
func (s *MemoryStore) Ping(ctx context.Context) error { return ctx.Err() }

// RecordResult implements Store.RecordResult.
func (s *MemoryStore) RecordResult(ctx context.Context, req RecordRequest, apply ApplyFunc) (Recorded, error) {
	if err := ctx.Err(); err != nil {
		return Recorded{}, err
	}
	r := &req.Result
	if err := r.Validate(); err != nil {
		return Recorded{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()

	if m, ok := s.matches[r.MatchID]; ok {
		if m.hash != req.BodyHash {
			return Recorded{}, ConflictError(r.MatchID)
		}
		return Recorded{Context: cloneContext(m.ctx), Response: bytes.Clone(m.response), Replayed: true}, nil
	}

	c, unknown, err := s.policy.Context(r.GameType, r.Mutators)
	if err != nil {
		return Recorded{}, err
	}
	key := c.Key()
	mc := s.contexts[key]
	ps := ResultParticipants(*r)
	prior := make(map[Participant]Rating, len(ps))
	var bias BiasTable
	pair := resultSidePair(*r)
	if mc != nil {
		for _, p := range ps {
			if rt, ok := mc.ratings[p]; ok {
				prior[p] = rt
			}
		}
		if t := mc.bias[pair]; t != nil {
			bias = t.Clone() // apply only reads it, but a callback cannot corrupt the store
		}
	}

	o, resp, err := apply(cloneContext(c), prior, bias)
	if err != nil {
		return Recorded{}, err
	}
	if err := CheckOutcome(*r, o); err != nil {
		return Recorded{}, err
	}
	if resp == nil {
		resp = []byte{}
	}

	// Nothing has changed so far: from here on every step succeeds.
	for _, m := range unknown {
		s.policy.Observe(m)
	}
	if mc == nil {
		mc = &memContext{ctx: c, ratings: make(map[Participant]Rating), bias: make(map[sidePair]*BiasTable)}
		s.contexts[key] = mc
	}
	for _, u := range o.Updates {
		mc.ratings[u.Participant] = u.After
	}
	if o.BiasUpdate.Games != 0 || o.BiasUpdate.Wins != 0 {
		t := mc.bias[pair]
		if t == nil {
			t = &BiasTable{}
			mc.bias[pair] = t
		}
		t.Record(o.BiasUpdate)
	}
	m := &memMatch{result: cloneResult(*r), ctxKey: key, ctx: c, hash: req.BodyHash, response: bytes.Clone(resp)}
	s.matches[r.MatchID] = m
	s.history[c.GameType] = append(s.history[c.GameType], m)
	return Recorded{Context: cloneContext(c), Response: bytes.Clone(resp)}, nil
}

// Ratings implements Store.Ratings.
func (s *MemoryStore) Ratings(ctx context.Context, c Context, ps []Participant) (map[Participant]Rating, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make(map[Participant]Rating, len(ps))
	s.mu.RLock()
	defer s.mu.RUnlock()
	mc := s.contexts[c.Key()]
	if mc == nil {
		return out, nil
	}
	for _, p := range ps {
		if rt, ok := mc.ratings[p]; ok {
			out[p] = rt
		}
	}
	return out, nil
}

// PlayerRatings implements Store.PlayerRatings; the list is sorted by context key.
func (s *MemoryStore) PlayerRatings(ctx context.Context, playerID string) ([]ContextRating, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := Participant{ID: playerID}
	var out []ContextRating
	s.mu.RLock()
	for _, mc := range s.contexts {
		if rt, ok := mc.ratings[p]; ok {
			out = append(out, ContextRating{Context: cloneContext(mc.ctx), Rating: rt})
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b ContextRating) int { return strings.Compare(a.Context.Key(), b.Context.Key()) })
	return out, nil
}

// Leaderboard implements Store.Leaderboard.
func (s *MemoryStore) Leaderboard(ctx context.Context, c Context, limit int, by Ranking) ([]RatedParticipant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return []RatedParticipant{}, nil
	}
	s.mu.RLock()
	mc := s.contexts[c.Key()]
	var all []RatedParticipant
	if mc != nil {
		all = make([]RatedParticipant, 0, len(mc.ratings))
		for p, rt := range mc.ratings {
			if !p.Bot {
				all = append(all, RatedParticipant{p, rt})
			}
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(all, func(a, b RatedParticipant) int {
		return cmp.Or(cmp.Compare(by.Score(b.Rating), by.Score(a.Rating)), cmp.Compare(a.Participant.ID, b.Participant.ID))
	})
	if len(all) > limit {
		all = all[:limit:limit]
	}
	if all == nil {
		all = []RatedParticipant{}
	}
	return all, nil
}

// Bias implements Store.Bias.
func (s *MemoryStore) Bias(ctx context.Context, c Context, k BiasKey) (BiasTable, error) {
	if err := ctx.Err(); err != nil {
		return BiasTable{}, err
	}
	var out BiasTable
	s.mu.RLock()
	defer s.mu.RUnlock()
	mc := s.contexts[c.Key()]
	if mc == nil {
		return out, nil
	}
	t := mc.bias[sidePair{k.SideA, k.SideB}]
	if t == nil {
		return out, nil
	}
	if cell, ok := t.cells[k]; ok {
		if err := out.Set(BiasEntry{Key: k, BiasCell: cell}); err != nil {
			return BiasTable{}, err
		}
	}
	if err := out.SetTotal(k, t.Total(k)); err != nil {
		return BiasTable{}, err
	}
	return out, nil
}

// BotMean implements Store.BotMean. The weights are summed in the order of the bots' names, so
// the figure does not depend on map order.
func (s *MemoryStore) BotMean(ctx context.Context, c Context) (float64, int, error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	var bots []RatedParticipant
	s.mu.RLock()
	if mc := s.contexts[c.Key()]; mc != nil {
		for p, rt := range mc.ratings {
			if p.Bot {
				bots = append(bots, RatedParticipant{p, rt})
			}
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(bots, func(a, b RatedParticipant) int { return strings.Compare(a.Participant.ID, b.Participant.ID) })
	skills := make([]float64, len(bots))
	for i, b := range bots {
		skills[i] = b.Rating.Skill
	}
	mean, n := MeanWeight(skills)
	return mean, n, nil
}

// MeanWeight is the mean Rating.Weight of ratings with the given skills, summed in the order
// given, and their count; with none it is 50 and 0 (the weight of an unknown participant).
// Both stores compute BotMean with it, so they agree to the bit.
func MeanWeight(skills []float64) (float64, int) {
	if len(skills) == 0 {
		return 50, 0
	}
	var sum float64
	for _, sk := range skills {
		sum += Rating{Skill: sk}.Weight()
	}
	return sum / float64(len(skills)), len(skills)
}

// Policy implements Store.Policy.
func (s *MemoryStore) Policy(ctx context.Context) (*MutatorPolicy, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.policy.Clone(), nil
}

// SetMutator implements Store.SetMutator.
func (s *MemoryStore) SetMutator(ctx context.Context, name string, affectsGameplay bool) (MutatorInfo, error) {
	if err := ctx.Err(); err != nil {
		return MutatorInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.policy.Set(name, affectsGameplay); err != nil {
		return MutatorInfo{}, err
	}
	return MutatorInfo{Name: fold(name), Status: s.policy.Status(name)}, nil
}

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
	states, err := replay(s.policy.Clone(), nil, func(yield func(Result) bool) {
		for _, m := range ms {
			if !yield(cloneResult(m.result)) {
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
	tell("writing", rep.Ratings, rep.Ratings)
	return rep, nil
}

// ContextState is one context's state as a rebuild writes it.
type ContextState struct {
	Context Context
	State   *State
}

// RebuildContexts checks what a ReplayFunc returned for a rebuild of gameType and lists it in
// the order of the context keys: every key must be a canonical context key of that game type,
// every rating finite and every bias cell consistent. The report counts contexts and ratings
// (Results is left to the caller).
func RebuildContexts(gameType string, states map[string]*State) ([]ContextState, RebuildReport, error) {
	var rep RebuildReport
	out := make([]ContextState, 0, len(states))
	for key, st := range states {
		c, err := ParseContextKey(key)
		if err != nil {
			return nil, rep, apperr.Wrap(apperr.Internal, err, "rebuild: the replay returned a malformed context key")
		}
		if c.GameType != gameType {
			return nil, rep, apperr.New(apperr.Internal, "rebuild of %q: the replay returned context %q of another game type", gameType, key)
		}
		if st == nil {
			st = &State{}
		}
		for p, rt := range st.Ratings {
			if msg := checkID(p.ID); msg != "" {
				return nil, rep, apperr.New(apperr.Internal, "rebuild: context %q: participant %q %s", key, p.ID, msg)
			}
			if err := checkRating(rt); err != nil {
				return nil, rep, apperr.Wrap(apperr.Internal, err, fmt.Sprintf("rebuild: context %q: %v", key, p))
			}
		}
		var check BiasTable
		for _, e := range st.Bias.Entries() {
			if err := check.Set(e); err != nil {
				return nil, rep, apperr.Wrap(apperr.Internal, err, fmt.Sprintf("rebuild: context %q", key))
			}
		}
		rep.Ratings += len(st.Ratings)
		out = append(out, ContextState{Context: c, State: st})
	}
	slices.SortFunc(out, func(a, b ContextState) int { return strings.Compare(a.Context.Key(), b.Context.Key()) })
	rep.Contexts = len(out)
	return out, rep, nil
}

// checkRating rejects a rating a store could not keep: non-finite numbers, negative
// accumulators, uncertainties or game counts.
func checkRating(rt Rating) error {
	for _, x := range []float64{rt.Skill, rt.Offset, rt.Commander, rt.SkillG, rt.CommanderG, rt.Sigma, rt.OffsetSigma, rt.CommanderSigma} {
		if !finite(x) {
			return fmt.Errorf("rating %+v is not finite", rt)
		}
	}
	if rt.SkillG < 0 || rt.CommanderG < 0 || rt.Games < 0 || rt.Sigma < 0 || rt.OffsetSigma < 0 || rt.CommanderSigma < 0 {
		return fmt.Errorf("rating %+v has a negative accumulator or game count", rt)
	}
	return nil
}

// CheckOutcome verifies that an ApplyFunc's outcome is one a store can keep for result r:
// updates only for the result's participants, each at most once, with finite ratings, and a
// bias update (if any) for the result's side pair with 0 <= wins <= games. A store calls it
// before writing anything, so a buggy ApplyFunc fails the call instead of corrupting ratings.
func CheckOutcome(r Result, o Outcome) error {
	ps := ResultParticipants(r)
	seen := make([]bool, len(ps))
	for _, u := range o.Updates {
		i, ok := slices.BinarySearchFunc(ps, u.Participant, Participant.Compare)
		if !ok {
			return apperr.New(apperr.Internal, "apply updated %v, who is not in match %q", u.Participant, r.MatchID)
		}
		if seen[i] {
			return apperr.New(apperr.Internal, "apply updated %v twice", u.Participant)
		}
		seen[i] = true
		if err := checkRating(u.After); err != nil {
			return apperr.Wrap(apperr.Internal, err, fmt.Sprintf("apply's update of %v", u.Participant))
		}
	}
	b := o.BiasUpdate
	if b.Games == 0 && b.Wins == 0 {
		return nil
	}
	if pair := resultSidePair(r); b.Key.SideA != pair.a || b.Key.SideB != pair.b {
		return apperr.New(apperr.Internal, "apply's bias update is for sides %q/%q, not the match's %q/%q", b.Key.SideA, b.Key.SideB, pair.a, pair.b)
	}
	if !finite(b.Wins) || !finite(b.Games) || b.Wins < 0 || b.Games < b.Wins || !b.Terms.valid() {
		return apperr.New(apperr.Internal, "apply's bias update %+v: want 0 <= wins <= games, finite terms", b)
	}
	if checkMap(b.Key.Map) != "" || b.Key.Size < 1 {
		return apperr.New(apperr.Internal, "apply's bias update %+v has a malformed key", b.Key)
	}
	return nil
}

// ResultParticipants lists the participants of a valid result in Participant.Compare order:
// the order in which stores lock their ratings.
func ResultParticipants(r Result) []Participant {
	n := 0
	for _, t := range r.Teams {
		n += len(t.Players)
	}
	ps := make([]Participant, 0, n)
	for _, t := range r.Teams {
		for _, p := range t.Players {
			ps = append(ps, p.Participant())
		}
	}
	slices.SortFunc(ps, Participant.Compare)
	return slices.Compact(ps)
}

// ResultBiasKey is the key of the bias cell a valid result is filed under (BiasKey's canonical
// side order), the same one every Model.Apply computes.
func ResultBiasKey(r Result) BiasKey {
	k, _ := NewBiasKey(r.Teams[0].Side, r.Teams[1].Side, r.Map, r.TeamSize())
	return k
}

func resultSidePair(r Result) sidePair {
	k := ResultBiasKey(r)
	return sidePair{k.SideA, k.SideB}
}

// ConflictError is the error of a match id reused with another body, as both stores say it.
func ConflictError(matchID string) error {
	return apperr.New(apperr.Conflict, "match %q was already recorded with a different body", matchID)
}

// ResultNotFoundError is the error of a match id under which no result is stored.
func ResultNotFoundError(matchID string) error {
	return apperr.New(apperr.NotFound, "no result is stored under match id %q", matchID)
}

func cloneContext(c Context) Context {
	return Context{GameType: c.GameType, Mutators: slices.Clone(c.Mutators)}
}

// cloneResult is a deep copy: the caller keeps its slices, the store its own.
func cloneResult(r Result) Result {
	c := r
	c.Mutators = slices.Clone(r.Mutators)
	c.Teams = make([]Team, len(r.Teams))
	for i, t := range r.Teams {
		c.Teams[i] = Team{Side: t.Side, Players: slices.Clone(t.Players)}
	}
	if r.Winner != nil {
		w := *r.Winner
		c.Winner = &w
	}
	return c
}
