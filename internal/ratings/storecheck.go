package ratings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

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
	for _, x := range []float64{rt.Skill, rt.Offset, rt.Commander, rt.SkillG, rt.CommanderG, rt.Sigma, rt.OffsetSigma, rt.CommanderSigma, rt.Surprise,
		rt.AltSkill, rt.AltSigma} {
		if !finite(x) {
			return fmt.Errorf("rating %+v is not finite", rt)
		}
	}
	if rt.SkillG < 0 || rt.CommanderG < 0 || rt.Games < 0 || rt.Sigma < 0 || rt.OffsetSigma < 0 || rt.CommanderSigma < 0 ||
		rt.SeasonGames < 0 || rt.Season < 0 || rt.LastPlayed < 0 || rt.Surprise < 0 || rt.AltSigma < 0 {
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
