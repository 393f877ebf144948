package shaped

import (
	"math"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// exactMembers is the most tickets a shaped match is split by trying every split (up to
// exactNodes steps); a larger one is split by a heuristic: each ticket, largest party and
// highest rating first, to the team furthest below its share of the ratings, then swaps
// between the strongest and the weakest team while they even them.
const (
	exactMembers = 12
	exactNodes   = 1 << 16
	swapRounds   = 16
)

// shapeInfo is what the split reads of the shape, once a pass.
type shapeInfo struct {
	sizes            []int
	twinOf           []int   // the first team of an identical definition: the split tries one of them
	roleMin, roleMax [][]int // per team, per role, with a composition
	hasComposition   []bool
	roleMinSum       []int
}

func newShapeInfo(cfg *matchrules.Config) shapeInfo {
	n := len(cfg.Shape)
	in := shapeInfo{sizes: make([]int, n), twinOf: make([]int, n), roleMin: make([][]int, n), roleMax: make([][]int, n),
		hasComposition: make([]bool, n), roleMinSum: make([]int, n)}
	for k, d := range cfg.Shape {
		in.sizes[k] = d.Size
		in.twinOf[k] = k
		for j := range k {
			e := cfg.Shape[j]
			if e.Size == d.Size && slices.Equal(e.MinSize, d.MinSize) && sameComposition(e.Composition, d.Composition) {
				in.twinOf[k] = j
				break
			}
		}
		if len(d.Composition) == 0 {
			continue
		}
		in.hasComposition[k] = true
		in.roleMin[k], in.roleMax[k] = make([]int, len(cfg.Roles)), make([]int, len(cfg.Roles))
		for r, role := range cfg.Roles {
			b, ok := d.Composition[role]
			if !ok {
				b = matchrules.RoleRange{Min: 0, Max: d.Size}
			}
			in.roleMin[k][r], in.roleMax[k][r] = b.Min, b.Max
			in.roleMinSum[k] += b.Min
		}
	}
	return in
}

func sameComposition(a, b map[string]matchrules.RoleRange) bool {
	if len(a) != len(b) {
		return false
	}
	for r, x := range a {
		if y, ok := b[r]; !ok || x != y {
			return false
		}
	}
	return true
}

// splitState is the search of one split; its buffers serve every match of a pass.
type splitState struct {
	shape       shapeInfo
	group       []int32 // the group's live indices
	order       []int   // g's indices, largest party first, then highest total
	playersFrom []int   // players of order[j:]
	// the lowest and highest rating of a player of order[j:], with bound
	lowestFrom, highestFrom []float64
	prunes                  bool   // cannotBeat prunes: an exact full split, a team of more than one
	team                    []int8 // by g index
	best                    []int8
	teamPlayers             []int
	teamTotals              []float64
	mins                    []int
	full                    bool
	heuristic               bool // stop at the first valid split (the heuristic)
	steps                   int
	spread                  float64 // the best split's
	found                   bool
	cut                     bool // the search stopped at exactNodes
	// the first party_mix rule that refused a split of the right sizes, and by how much
	mixBroken, mixDiff int
	apartRefused       bool // scope team: a team was refused to a ticket for the avoid lists
	teamRoles          []matchrules.RoleList
	roleOut            []int8
	seats              []uint64 // with a fill space, each team's role states (shaped_fill.go)
}

// splitGroup splits the group g into the shape's teams: every party whole on one team,
// every team at its size (full) or at least its current minimum (mins), party_mix and the
// compositions kept, with the least spread of team averages. ok false: no such split;
// turned, when a team_balance rule turned down the best one.
func (s *shaper) splitGroup(g []int32, mins []int, full bool) (team []int8, exact, ok bool, turned matchpool.Wait) {
	sp := &s.split
	n := len(sp.shape.sizes)
	sp.group, sp.mins, sp.full = g, mins, full
	sp.team, sp.best = scratch.Resize(sp.team, len(g)), scratch.Resize(sp.best, len(g))
	sp.teamPlayers, sp.teamTotals = scratch.Resize(sp.teamPlayers, n), scratch.Resize(sp.teamTotals, n)
	clear(sp.teamPlayers)
	clear(sp.teamTotals)
	s.orderParties(g)
	sp.playersFrom = scratch.Resize(sp.playersFrom, len(g)+1)
	sp.playersFrom[len(g)] = 0
	sp.heuristic = len(g) > exactMembers
	// With teams of one player every full split spreads the same: no bound prunes.
	sp.prunes = full && !sp.heuristic && slices.ContainsFunc(sp.shape.sizes, func(n int) bool { return n > 1 })
	if sp.prunes {
		sp.lowestFrom, sp.highestFrom = scratch.Resize(sp.lowestFrom, len(g)+1), scratch.Resize(sp.highestFrom, len(g)+1)
		sp.lowestFrom[len(g)], sp.highestFrom[len(g)] = math.Inf(1), math.Inf(-1)
	}
	for j := len(g) - 1; j >= 0; j-- {
		x := &s.live[g[sp.order[j]]]
		sp.playersFrom[j] = sp.playersFrom[j+1] + x.size
		if !sp.prunes {
			continue
		}
		lo, hi := sp.lowestFrom[j+1], sp.highestFrom[j+1]
		for _, r := range s.ratings[x.ratingsAt : x.ratingsAt+int32(x.size)] {
			lo, hi = min(lo, r), max(hi, r)
		}
		sp.lowestFrom[j], sp.highestFrom[j] = lo, hi
	}
	if s.fillSpace != nil {
		sp.seats = scratch.Resize(sp.seats, n)
		for k := range sp.seats {
			sp.seats[k] = 1 // no player yet
		}
	}
	sp.steps, sp.found, sp.cut, sp.spread = 0, false, false, math.Inf(1)
	sp.mixBroken, sp.apartRefused = -1, false
	s.place(0)
	if !sp.found {
		if sp.mixBroken >= 0 { // the sizes allowed splits, and party_mix refused them
			w := matchpool.WaitOn(s.rules[sp.mixBroken].rule)
			w.Found, w.Value, w.Candidates = true, float64(sp.mixDiff), len(g)-1
			w.Tolerance = float64(s.rules[sp.mixBroken].rule.MaxDifference)
			return nil, false, false, w
		}
		if sp.apartRefused {
			return nil, false, false, matchpool.Wait{Rule: matchrules.WaitAvoid, Kind: matchrules.WaitAvoid, Found: true, Candidates: len(g) - 1}
		}
		return nil, false, false, matchpool.Wait{}
	}
	exact = !sp.heuristic && !sp.cut
	if sp.heuristic {
		s.swaps()
	}
	copy(sp.team, sp.best)
	for i := range s.rules {
		d := &s.rules[i]
		if d.rule.Kind != matchrules.RuleTeamBalance {
			continue
		}
		tol, bound := math.Inf(1), false
		for _, m := range g {
			if d.bound[m] {
				tol, bound = min(tol, d.tolerance[m]), true
			}
		}
		if bound && sp.spread > tol {
			w := matchpool.WaitOn(d.rule)
			w.Found, w.Value, w.Tolerance, w.Candidates = true, sp.spread, tol, len(g)-1
			return nil, false, false, w
		}
	}
	if w, broken := s.balanceBroken(g, sp.spread); broken {
		return nil, false, false, w
	}
	return sp.team, exact, true, matchpool.Wait{}
}

// orderParties sets sp.order to g's indices, the largest party first, then the highest
// total (of one size: the highest mean), then the first in g: by insertion, a group being
// a few tickets (a sort calling a comparison for each pair cost more).
func (s *shaper) orderParties(g []int32) {
	sp := &s.split
	sp.order = sp.order[:0]
	for j := range g {
		sp.order = append(sp.order, j)
	}
	before := func(a, b int) bool { // the walk's nodes, in cache where the tickets are not
		x, y := &s.nodes[g[a]], &s.nodes[g[b]]
		return x.size > y.size || x.size == y.size && x.mean > y.mean
	}
	if len(g) > insertionMax {
		slices.SortStableFunc(sp.order, func(a, b int) int {
			switch {
			case before(a, b):
				return -1
			case before(b, a):
				return 1
			}
			return 0
		})
		return
	}
	o := sp.order
	for j := 1; j < len(o); j++ {
		for i := j; i > 0 && before(o[i], o[i-1]); i-- {
			o[i], o[i-1] = o[i-1], o[i]
		}
	}
}

// insertionMax is the largest group orderParties sorts by insertion.
const insertionMax = 24

// place tries every team for the ticket order[j] and goes on, the teams furthest below
// their share first.
func (s *shaper) place(j int) {
	sp := &s.split
	if sp.heuristic && sp.found || sp.cut {
		return
	}
	if j == len(sp.order) {
		s.leaf()
		return
	}
	if sp.steps++; sp.steps > exactNodes {
		sp.cut = true
		return
	}
	m := sp.order[j]
	x := &s.live[sp.group[m]]
	var tried [matchrules.MaxTeams]bool
	n := len(sp.shape.sizes)
	for range n {
		k := -1 // the untried team with room furthest below its share
		for c := range n {
			if tried[c] || sp.teamPlayers[c]+x.size > sp.shape.sizes[c] {
				continue
			}
			if k < 0 || sp.teamTotals[c]/float64(sp.shape.sizes[c]) < sp.teamTotals[k]/float64(sp.shape.sizes[k]) {
				k = c
			}
		}
		if k < 0 {
			return
		}
		tried[k] = true
		if sp.teamPlayers[k] == 0 && s.emptyTwin(k) || s.avoid != nil && s.avoid.Team && s.apartOn(j, k) {
			continue
		}
		var seats uint64
		if s.fillSpace != nil { // the team's role states with x seated: none, and no split seats x there
			t := &s.fillSpace.teams[k]
			if seats = s.seatType(x.fillType, t.kind, sp.seats[k]); seats == 0 {
				continue
			}
			seats, sp.seats[k] = sp.seats[k], seats
		}
		sp.teamPlayers[k] += x.size
		sp.teamTotals[k] += x.total
		sp.team[m] = int8(k)
		if s.canFinish(j+1) && !s.cannotBeat(j+1) {
			s.place(j + 1)
		}
		sp.teamPlayers[k] -= x.size
		sp.teamTotals[k] -= x.total
		if s.fillSpace != nil {
			sp.seats[k] = seats
		}
		if sp.heuristic && sp.found || sp.cut {
			return
		}
	}
}

// emptyTwin: an empty team of the same definition as k, before it, is empty too; placing
// there is the same split.
func (s *shaper) emptyTwin(k int) bool {
	sp := &s.split
	for c := range k {
		if sp.shape.twinOf[c] == sp.shape.twinOf[k] && sp.teamPlayers[c] == 0 {
			return true
		}
	}
	return false
}

// canFinish: the tickets from order[j] on can still bring every team to its minimum.
func (s *shaper) canFinish(j int) bool {
	sp := &s.split
	short := 0
	for k, u := range sp.teamPlayers {
		want := sp.mins[k]
		if sp.full {
			want = sp.shape.sizes[k]
		}
		short += max(0, want-u)
	}
	return short <= sp.playersFrom[j]
}

// cannotBeat: every full split that seats order[j:] on the teams as they are now spreads
// the teams' averages more than the best one found. Each team's room takes players rated
// between the lowest and the highest of those left, which bounds its average; the spread
// is at least the highest lower bound less the lowest upper bound. (Only for exact full
// splits, whose teams' sizes are known, with a team of more than one player: sp.prunes.)
func (s *shaper) cannotBeat(j int) bool {
	sp := &s.split
	if !sp.found || !sp.prunes || j == len(sp.order) {
		return false
	}
	lo, hi := math.Inf(-1), math.Inf(1) // the highest lower bound, the lowest upper bound
	for k, u := range sp.teamPlayers {
		size := float64(sp.shape.sizes[k])
		room := size - float64(u)
		lo = max(lo, (sp.teamTotals[k]+room*sp.lowestFrom[j])/size)
		hi = min(hi, (sp.teamTotals[k]+room*sp.highestFrom[j])/size)
	}
	// A margin far above rounding: a split within it of the best is not pruned.
	return lo-hi > sp.spread+1e-6
}

// leaf judges a complete split: the least spread of averages among the valid ones.
func (s *shaper) leaf() {
	sp := &s.split
	for k, u := range sp.teamPlayers {
		if u < sp.mins[k] || sp.full && u != sp.shape.sizes[k] {
			return
		}
	}
	spread := s.spreadOf()
	if sp.found && spread >= sp.spread {
		return
	}
	if k, diff := s.partyMixBroken(); k >= 0 {
		if sp.mixBroken < 0 {
			sp.mixBroken, sp.mixDiff = k, diff
		}
		return
	}
	if !s.rolesMet() {
		return
	}
	sp.found, sp.spread = true, spread
	copy(sp.best, sp.team)
}

func (s *shaper) spreadOf() float64 {
	sp := &s.split
	lo, hi := math.Inf(1), math.Inf(-1)
	for k, u := range sp.teamPlayers {
		if u == 0 {
			continue
		}
		avg := sp.teamTotals[k] / float64(u)
		lo, hi = min(lo, avg), max(hi, avg)
	}
	return hi - lo
}

// partyMixBroken returns the first party_mix rule the split in sp.team breaks and the
// difference of its teams' largest parties; -1 when it keeps them all.
func (s *shaper) partyMixBroken() (int, int) {
	sp := &s.split
	for i := range s.rules {
		d := &s.rules[i]
		if d.rule.Kind != matchrules.RulePartyMix {
			continue
		}
		var largest [matchrules.MaxTeams]int
		bound := false
		for m, i := range sp.group {
			largest[sp.team[m]] = max(largest[sp.team[m]], s.live[i].size)
			bound = bound || d.bound[i]
		}
		lo, hi := math.MaxInt, 0
		for k := range sp.shape.sizes {
			if sp.teamPlayers[k] > 0 {
				lo, hi = min(lo, largest[k]), max(hi, largest[k])
			}
		}
		if bound && hi-lo > d.rule.MaxDifference {
			return i, hi - lo
		}
	}
	return -1, 0
}

// rolesMet says whether every team of the split in sp.team meets its composition: by the
// teams' role states the search kept, with a fill space.
func (s *shaper) rolesMet() bool {
	if s.fillSpace == nil {
		return s.compositionOK(nil, nil)
	}
	for k, seats := range s.split.seats {
		if seats&s.fillSpace.teams[k].met == 0 {
			return false
		}
	}
	return true
}

// compositionOK checks each team's composition on the split in sp.team; with roles, it
// writes each player's role there: member m's player p at roles[at[m]+p].
func (s *shaper) compositionOK(roles []int8, at []int) bool {
	sp := &s.split
	for k := range sp.shape.sizes {
		if !sp.shape.hasComposition[k] && roles == nil {
			continue
		}
		sp.teamRoles = sp.teamRoles[:0]
		for m, i := range sp.group {
			if int(sp.team[m]) == k {
				sp.teamRoles = append(sp.teamRoles, s.rolesOf(&s.live[i])...)
			}
		}
		if len(sp.teamRoles) == 0 {
			continue
		}
		sp.roleOut = scratch.Resize(sp.roleOut, len(sp.teamRoles))
		if sp.shape.hasComposition[k] {
			all, covered := matchrules.FitRoles(sp.teamRoles, sp.shape.roleMin[k], sp.shape.roleMax[k], sp.roleOut)
			if !all || covered < sp.shape.roleMinSum[k] {
				return false
			}
		} else {
			for p := range sp.teamRoles {
				sp.roleOut[p] = -1
				if rs := &sp.teamRoles[p]; rs.Len() > 0 {
					sp.roleOut[p] = int8(rs.Roles()[0])
				}
			}
		}
		if roles != nil {
			from := 0
			for m, i := range sp.group {
				if int(sp.team[m]) == k {
					n := s.live[i].size
					copy(roles[at[m]:at[m]+n], sp.roleOut[from:from+n])
					from += n
				}
			}
		}
	}
	return true
}

// swaps evens a heuristic split: while swapping two tickets of one size between the
// strongest and the weakest team (by average) narrows the spread and keeps the rules, swap
// the pair that narrows it most.
func (s *shaper) swaps() {
	sp := &s.split
	copy(sp.team, sp.best)
	s.recount()
	for range swapRounds {
		hiK, loK := -1, -1
		for k, u := range sp.teamPlayers {
			if u == 0 {
				continue
			}
			avg := sp.teamTotals[k] / float64(u)
			if hiK < 0 || avg > sp.teamTotals[hiK]/float64(sp.teamPlayers[hiK]) {
				hiK = k
			}
			if loK < 0 || avg < sp.teamTotals[loK]/float64(sp.teamPlayers[loK]) {
				loK = k
			}
		}
		if hiK == loK {
			return
		}
		bestA, bestB, best := -1, -1, sp.spread
		for a := range sp.group {
			if int(sp.team[a]) != hiK {
				continue
			}
			for b := range sp.group {
				x, y := &s.live[sp.group[a]], &s.live[sp.group[b]]
				if int(sp.team[b]) != loK || x.size != y.size || x.total <= y.total {
					continue
				}
				s.swap(a, b, hiK, loK)
				if spread := s.spreadOf(); spread < best && s.partyMixKept() && s.compositionOK(nil, nil) && s.apartKept() {
					bestA, bestB, best = a, b, spread
				}
				s.swap(a, b, loK, hiK)
			}
		}
		if bestA < 0 {
			return
		}
		s.swap(bestA, bestB, hiK, loK)
		sp.spread = best
		copy(sp.best, sp.team)
	}
}

// swap moves ticket a from team from to team to, and b the other way.
func (s *shaper) swap(a, b, from, to int) {
	sp := &s.split
	d := s.live[sp.group[a]].total - s.live[sp.group[b]].total
	sp.team[a], sp.team[b] = int8(to), int8(from)
	sp.teamTotals[from] -= d
	sp.teamTotals[to] += d
}

// recount sets used and sum from sp.team.
func (s *shaper) recount() {
	sp := &s.split
	clear(sp.teamPlayers)
	clear(sp.teamTotals)
	for m, i := range sp.group {
		sp.teamPlayers[sp.team[m]] += s.live[i].size
		sp.teamTotals[sp.team[m]] += s.live[i].total
	}
}

func (s *shaper) partyMixKept() bool { k, _ := s.partyMixBroken(); return k < 0 }
