package ratings

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
)

// MemoryStore is the Store kept in the process: the embedded default when no database is
// configured. Everything it knows is lost when the process exits.
//
// One RWMutex guards it: results, mutator changes and rebuilds take it exclusively (so they
// are applied one at a time, in the order they took the lock, which is the order a rebuild
// replays them in), reads share it. The ApplyFunc, ReplayFunc and progress callbacks run under
// the lock and must not call back into the store.
type MemoryStore struct {
	mu         sync.RWMutex
	policy     *MutatorPolicy
	contexts   map[string]*memContext // by Context.Key
	matches    map[string]*memMatch   // by match id
	history    map[string][]*memMatch // by game type, in the order accepted
	tunings    map[string]Tuning      // by Context.Key
	tuneClaims map[string]bool        // contexts being tuned (ClaimTune)
	seq        int64                  // the last result's number in the order accepted

	seasons   map[string][]*Season  // by Context.Key, in the order defined
	standings map[string][]Standing // by seasonKey, best first
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
	seq      int64 // its number in the order accepted (Season.ResetAfter)
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

		seasons:   make(map[string][]*Season),
		standings: make(map[string][]Standing),
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
	seasons := s.resetSeasons(key)
	if mc != nil {
		for _, p := range ps {
			if rt, ok := mc.ratings[p]; ok {
				prior[p] = CatchUp(rt, seasons) // a no-op: ResetSeason resets every rating at once
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
	epoch := latestEpoch(seasons)
	for _, u := range o.Updates {
		mc.ratings[u.Participant] = stampSeason(u.After, epoch)
	}
	if o.BiasUpdate.Games != 0 || o.BiasUpdate.Wins != 0 {
		t := mc.bias[pair]
		if t == nil {
			t = &BiasTable{}
			mc.bias[pair] = t
		}
		t.Record(o.BiasUpdate)
	}
	s.seq++
	m := &memMatch{result: cloneResult(*r), ctxKey: key, ctx: c, hash: req.BodyHash, response: bytes.Clone(resp), seq: s.seq}
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
			if !p.Bot && by.Includes(rt) {
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
