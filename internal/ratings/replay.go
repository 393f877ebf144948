package ratings

import (
	"fmt"
	"iter"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// State is everything the model learns in one context: every participant's rating and the
// bias table. The zero State is empty and ready to use. It is what a rebuild recomputes from
// the stored history.
type State struct {
	Ratings map[Participant]Rating
	Bias    BiasTable
	Matches int // results applied
}

// Apply learns from one result and records the outcome in the state.
func (s *State) Apply(m Model, r Result) (Outcome, error) {
	o, err := m.Apply(s.Ratings, s.Bias, r)
	if err != nil {
		return Outcome{}, err
	}
	s.Record(o)
	return o, nil
}

// Record stores an outcome computed by a Model's Apply from this state.
func (s *State) Record(o Outcome) {
	if s.Ratings == nil {
		s.Ratings = make(map[Participant]Rating)
	}
	for _, u := range o.Updates {
		s.Ratings[u.Participant] = u.After
	}
	s.Bias.Record(o.BiasUpdate)
	s.Matches++
}

// Participants lists the rated participants in order (players first, then by id).
func (s *State) Participants() []Participant {
	out := make([]Participant, 0, len(s.Ratings))
	for p := range s.Ratings {
		out = append(out, p)
	}
	slices.SortFunc(out, Participant.Compare)
	return out
}

// Replay recomputes a context's state from its history, applied in the given order (the order
// the results were accepted in). The same history gives bit-identical ratings: every sum runs
// in a fixed order and no step depends on map iteration. An invalid result stops the replay
// with an error naming its index and match id.
func Replay(m Model, results []Result) (State, error) {
	var s State
	for i, r := range results {
		if _, err := s.Apply(m, r); err != nil {
			return State{}, replayError(i, r, err)
		}
	}
	return s, nil
}

// ReplayByContext rebuilds every context found in a history that mixes contexts: each result
// goes to the context the policy gives it now (so reclassifying a mutator and rebuilding
// re-splits the history), in order. It also returns the mutators the policy does not classify,
// sorted, for the caller to record. The map is keyed by Context.Key.
func ReplayByContext(m Model, policy *MutatorPolicy, results []Result) (map[string]*State, []string, error) {
	return replayByContext(func(Context) Model { return m }, policy, results)
}

// replayByContext is ReplayByContext with each context's model given by pick.
func replayByContext(pick func(Context) Model, policy *MutatorPolicy, results []Result) (map[string]*State, []string, error) {
	states := make(map[string]*State)
	models := make(map[string]Model)
	var unknown []string
	for i, r := range results {
		c, unk, err := policy.Context(r.GameType, r.Mutators)
		if err != nil {
			return nil, nil, replayError(i, r, err)
		}
		unknown = append(unknown, unk...)
		s := states[c.Key()]
		if s == nil {
			s = &State{}
			states[c.Key()] = s
			models[c.Key()] = pick(c)
		}
		if _, err := s.Apply(models[c.Key()], r); err != nil {
			return nil, nil, replayError(i, r, err)
		}
	}
	slices.Sort(unknown)
	return states, slices.Compact(unknown), nil
}

// replayStream applies a history, in order, to the states from (nil: a new map), each
// result to the context the policy gives it, with the model pick gives that context; it is a
// rebuild's replay, which sees the history one result at a time.
func replayStream(pick func(Context) Model, policy *MutatorPolicy, from map[string]*State, history iter.Seq[Result]) (map[string]*State, error) {
	states := from
	if states == nil {
		states = make(map[string]*State)
	}
	models := make(map[string]Model)
	i := 0
	for r := range history {
		c, _, err := policy.Context(r.GameType, r.Mutators)
		if err != nil {
			return nil, replayError(i, r, err)
		}
		key := c.Key()
		m := models[key]
		if m == nil {
			m = pick(c)
			models[key] = m
		}
		s := states[key]
		if s == nil {
			s = &State{}
			states[key] = s
		}
		if _, err := s.Apply(m, r); err != nil {
			return nil, replayError(i, r, err)
		}
		i++
	}
	return states, nil
}

func replayError(i int, r Result, err error) error {
	return apperr.Wrap(apperr.CodeOf(err), err, fmt.Sprintf("history result %d (match %q)", i, r.MatchID))
}
