package shaped

import (
	"math"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// The look-ahead's bounds: the candidates it chooses among, the splits it tries, and the
// spread of team averages (as a fraction of the anchor's interval) under which the walk's
// group is made without looking further.
const (
	lookAheadTickets = 10
	lookAheadSplits  = 64
	evenEnough       = 0.02
)

// balanceBroken says whether the split of group g, whose team averages spread by spread,
// breaks the default balance (matchrules.DefaultBalance of the anchor's interval): in a
// shape of two teams without a team_balance rule, for a group that holds a party; with the
// wait that says so.
func (s *shaper) balanceBroken(g []int32, spread float64) (matchpool.Wait, bool) {
	if !s.keepsBalance || !s.holdsParty(g) {
		return matchpool.Wait{}, false
	}
	a := &s.live[g[0]]
	bound := matchrules.DefaultBalance * a.interval
	if spread <= bound+1e-9*(1+math.Abs(a.mean)) {
		return matchpool.Wait{}, false
	}
	return matchpool.Wait{Rule: matchrules.WaitTeams, Kind: matchrules.WaitTeams, Candidates: len(g) - 1,
		Found: true, Value: spread, Tolerance: bound}, true
}

// holdsParty says whether a ticket of g has more than one player.
func (s *shaper) holdsParty(g []int32) bool {
	return slices.ContainsFunc(g, func(i int32) bool { return s.live[i].size > 1 })
}

// tryFullMatch makes the match of anchor a's full group g, or a more even one: the first
// full group of an anchor, in a shape of two teams, that holds a party and whose split
// spreads the teams' averages by more than evenEnough of the anchor's interval, or breaks
// the balance, has the anchor's candidates looked ahead (evenestGroup), and their most even
// match that keeps every rule and the balance is made instead when it is more even. When
// none does and the search held every candidate within the anchor's interval, the walk is
// done (s.exhausted): a match at the minimum sizes is left to the exhaustive search. left
// and right are the walk's next candidates.
func (s *shaper) tryFullMatch(a int32, g *group, mins []int, left, right int32) bool {
	team, exact, ok, turned := s.splitGroup(g.members, mins, true)
	worth := ok && s.split.spread > evenEnough*s.live[a].interval || !ok && turned.Kind == matchrules.WaitTeams && turned.Found
	if s.lookedAhead || !s.keepsBalance || !worth || !s.holdsParty(g.members) {
		return s.made(g, team, exact, ok, turned)
	}
	s.lookedAhead = true
	limit := math.Inf(1)
	if ok {
		limit = s.split.spread
	}
	if s.evenestGroup(a, g, mins, left, right, limit) {
		return true
	}
	if ok { // the group's own is the most even: split again (the search used the buffers)
		team, exact, ok, turned = s.splitGroup(g.members, mins, true)
	} else if s.sawEvery {
		// No full match keeps the balance: the walk is done, and the exhaustive search for a
		// match at the minimum sizes takes every candidate the look-ahead met.
		s.exhausted = true
		s.candidates = append(s.candidates[:0], s.around...)
	}
	return s.made(g, team, exact, ok, turned)
}

// made makes the match of group g split as team, or records the rule that turned it down.
func (s *shaper) made(g *group, team []int8, exact, ok bool, turned matchpool.Wait) bool {
	if !ok {
		if turned.Rule != "" {
			s.turnDowns++
			if s.turnedDown.Rule == "" {
				s.turnedDown = turned
			}
		}
		return false
	}
	s.makeMatch(g, team, exact)
	return true
}

// evenestGroup searches the candidates of anchor a, those of its full group g and the
// others walked, then the next ones the walk meets from left and right, lookAheadTickets
// in all at most, for the full match that keeps every rule and the balance with the least
// spread of team averages (lookAheadSplits splits at most, nearest first); when it spreads
// less than limit (g's own), it is made. Of equally even matches the first found, nearest
// first. s.sawEvery says whether it held every candidate within the anchor's interval.
func (s *shaper) evenestGroup(a int32, g *group, mins []int, left, right int32, limit float64) bool {
	s.sawEvery = false
	around, ok := s.lookAround(a, g, left, right)
	if !ok || len(around) == len(g.members)-1 && !math.IsInf(limit, 1) {
		return false // too many to search, or no other group to choose
	}
	capacity := s.capacity()
	best, bestSpread, splits, nodes := s.bestBuf[:0], math.Inf(1), 0, 0
	tol := 1e-9 * (1 + math.Abs(s.live[a].mean))
	var grow func(h *group, j int)
	grow = func(h *group, j int) {
		if nodes++; nodes > fallbackNodes || splits >= lookAheadSplits {
			return
		}
		if h.players == capacity {
			splits++
			if _, _, ok, _ := s.splitGroup(h.members, mins, true); ok && s.split.spread < bestSpread-tol {
				best, bestSpread = append(best[:0], h.members[1:]...), s.split.spread
			}
			return
		}
		if j == len(around) {
			return
		}
		if c := around[j]; s.fits(h, c, capacity) == 0 {
			next := s.searchGroup(j + 1)
			h.copyTo(next)
			s.add(next, c)
			grow(next, j+1)
		}
		grow(h, j+1)
	}
	grow(s.resetGroup(s.searchGroup(0), a), 0)
	s.bestBuf = best
	if len(best) == 0 || bestSpread >= limit-tol {
		return false
	}
	return s.tryMatch(s.regroup(a, best), mins, true)
}

// lookAround is the candidates of anchor a that the look-ahead chooses among, in the walk's
// order: those walked (s.candidates), which must hold every member of g, then the next ones
// the walk meets from left and right; ok false when they are too many.
func (s *shaper) lookAround(a int32, g *group, left, right int32) ([]int32, bool) {
	around := s.around[:0]
	for _, c := range s.candidates {
		if len(around) == lookAheadTickets {
			break
		}
		around = append(around, c)
	}
	for _, m := range g.members[1:] {
		if !slices.Contains(around, m) {
			s.around = around
			return nil, false
		}
	}
	walked := len(s.candidates) // the walk kept at most fallbackCandidates+1 of them
	for len(around) < lookAheadTickets && walked <= fallbackCandidates {
		c := s.nearer(a, &left, &right)
		if c < 0 {
			s.sawEvery = true
			break
		}
		if s.acceptable(a, c) == 0 {
			around = append(around, c)
		}
	}
	s.around = around
	return around, true
}
