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
	sizes  []int
	class  []int   // the first team of an identical definition: the split tries one of them
	lo, hi [][]int // per team, per role, with a composition
	comp   []bool
	loSum  []int
}

func newShapeInfo(cfg *matchrules.Config) shapeInfo {
	n := len(cfg.Shape)
	in := shapeInfo{sizes: make([]int, n), class: make([]int, n), lo: make([][]int, n), hi: make([][]int, n),
		comp: make([]bool, n), loSum: make([]int, n)}
	for k, d := range cfg.Shape {
		in.sizes[k] = d.Size
		in.class[k] = k
		for j := range k {
			e := cfg.Shape[j]
			if e.Size == d.Size && slices.Equal(e.MinSize, d.MinSize) && sameComposition(e.Composition, d.Composition) {
				in.class[k] = j
				break
			}
		}
		if len(d.Composition) == 0 {
			continue
		}
		in.comp[k] = true
		in.lo[k], in.hi[k] = make([]int, len(cfg.Roles)), make([]int, len(cfg.Roles))
		for r, role := range cfg.Roles {
			b, ok := d.Composition[role]
			if !ok {
				b = matchrules.RoleRange{Min: 0, Max: d.Size}
			}
			in.lo[k][r], in.hi[k][r] = b.Min, b.Max
			in.loSum[k] += b.Min
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
	info  shapeInfo
	g     []int32 // the group's live indices
	order []int   // g's indices, largest party first, then highest total
	rem   []int   // players of order[j:]
	// the lowest and highest rating of a player of order[j:], with bound
	remLo, remHi []float64
	bound        bool   // cannotBeat prunes: an exact full split, a team of more than one
	team         []int8 // by g index
	best         []int8
	used         []int
	sum          []float64
	mins         []int
	full         bool
	first        bool // stop at the first valid split (the heuristic)
	nodes        int
	spread       float64 // the best split's
	found        bool
	cut          bool // the search stopped at exactNodes
	// the first party_mix rule that refused a split of the right sizes, and by how much
	mixBroken, mixDiff int
	players            []matchrules.RoleList
	roleOut            []int8
	seats              []uint64 // with a fill space, each team's role states (shaped_fill.go)
}

// splitGroup splits the group g into the shape's teams: every party whole on one team,
// every team at its size (full) or at least its current minimum (mins), party_mix and the
// compositions kept, with the least spread of team averages. ok false: no such split;
// turned, when a team_balance rule turned down the best one.
func (s *shaper) splitGroup(g []int32, mins []int, full bool) (team []int8, exact, ok bool, turned matchpool.Wait) {
	sp := &s.split
	n := len(sp.info.sizes)
	sp.g, sp.mins, sp.full = g, mins, full
	sp.team, sp.best = scratch.Resize(sp.team, len(g)), scratch.Resize(sp.best, len(g))
	sp.used, sp.sum = scratch.Resize(sp.used, n), scratch.Resize(sp.sum, n)
	clear(sp.used)
	clear(sp.sum)
	s.orderParties(g)
	sp.rem = scratch.Resize(sp.rem, len(g)+1)
	sp.rem[len(g)] = 0
	sp.first = len(g) > exactMembers
	// With teams of one player every full split spreads the same: no bound prunes.
	sp.bound = full && !sp.first && slices.ContainsFunc(sp.info.sizes, func(n int) bool { return n > 1 })
	if sp.bound {
		sp.remLo, sp.remHi = scratch.Resize(sp.remLo, len(g)+1), scratch.Resize(sp.remHi, len(g)+1)
		sp.remLo[len(g)], sp.remHi[len(g)] = math.Inf(1), math.Inf(-1)
	}
	for j := len(g) - 1; j >= 0; j-- {
		x := &s.live[g[sp.order[j]]]
		sp.rem[j] = sp.rem[j+1] + x.size
		if !sp.bound {
			continue
		}
		lo, hi := sp.remLo[j+1], sp.remHi[j+1]
		for _, r := range s.ratings[x.ratings : x.ratings+int32(x.size)] {
			lo, hi = min(lo, r), max(hi, r)
		}
		sp.remLo[j], sp.remHi[j] = lo, hi
	}
	if s.fill != nil {
		sp.seats = scratch.Resize(sp.seats, n)
		for k := range sp.seats {
			sp.seats[k] = 1 // no player yet
		}
	}
	sp.nodes, sp.found, sp.cut, sp.spread = 0, false, false, math.Inf(1)
	sp.mixBroken = -1
	s.place(0)
	if !sp.found {
		if sp.mixBroken >= 0 { // the sizes allowed splits, and party_mix refused them
			w := matchpool.WaitOn(s.rules[sp.mixBroken].rule)
			w.Found, w.Value, w.Candidates = true, float64(sp.mixDiff), len(g)-1
			w.Tolerance = float64(s.rules[sp.mixBroken].rule.MaxDifference)
			return nil, false, false, w
		}
		return nil, false, false, matchpool.Wait{}
	}
	exact = !sp.first && !sp.cut
	if sp.first {
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
				tol, bound = min(tol, d.tol[m]), true
			}
		}
		if bound && sp.spread > tol {
			w := matchpool.WaitOn(d.rule)
			w.Found, w.Value, w.Tolerance, w.Candidates = true, sp.spread, tol, len(g)-1
			return nil, false, false, w
		}
	}
	return sp.team, exact, true, matchpool.Wait{}
}

// orderParties sets sp.order to g's indices, the largest party first, then the highest
// total (of one size: the highest mean), then the first in g: by insertion, a group being a few tickets (a sort calling a
// comparison was a quarter of splitting the role queue's groups).
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
	if sp.first && sp.found || sp.cut {
		return
	}
	if j == len(sp.order) {
		s.leaf()
		return
	}
	if sp.nodes++; sp.nodes > exactNodes {
		sp.cut = true
		return
	}
	m := sp.order[j]
	x := &s.live[sp.g[m]]
	var tried [matchrules.MaxTeams]bool
	n := len(sp.info.sizes)
	for range n {
		k := -1 // the untried team with room furthest below its share
		for c := range n {
			if tried[c] || sp.used[c]+x.size > sp.info.sizes[c] {
				continue
			}
			if k < 0 || sp.sum[c]/float64(sp.info.sizes[c]) < sp.sum[k]/float64(sp.info.sizes[k]) {
				k = c
			}
		}
		if k < 0 {
			return
		}
		tried[k] = true
		if sp.used[k] == 0 && s.emptyTwin(k) {
			continue
		}
		var seats uint64
		if s.fill != nil { // the team's role states with x seated: none, and no split seats x there
			t := &s.fill.teams[k]
			if seats = s.seatType(x.fillType, t.kind, sp.seats[k]); seats == 0 {
				continue
			}
			seats, sp.seats[k] = sp.seats[k], seats
		}
		sp.used[k] += x.size
		sp.sum[k] += x.total
		sp.team[m] = int8(k)
		if s.canFinish(j+1) && !s.cannotBeat(j+1) {
			s.place(j + 1)
		}
		sp.used[k] -= x.size
		sp.sum[k] -= x.total
		if s.fill != nil {
			sp.seats[k] = seats
		}
		if sp.first && sp.found || sp.cut {
			return
		}
	}
}

// emptyTwin: an empty team of the same definition as k, before it, is empty too; placing
// there is the same split.
func (s *shaper) emptyTwin(k int) bool {
	sp := &s.split
	for c := range k {
		if sp.info.class[c] == sp.info.class[k] && sp.used[c] == 0 {
			return true
		}
	}
	return false
}

// canFinish: the tickets from order[j] on can still bring every team to its minimum.
func (s *shaper) canFinish(j int) bool {
	sp := &s.split
	short := 0
	for k, u := range sp.used {
		want := sp.mins[k]
		if sp.full {
			want = sp.info.sizes[k]
		}
		short += max(0, want-u)
	}
	return short <= sp.rem[j]
}

// cannotBeat: every full split that seats order[j:] on the teams as they are now spreads
// the teams' averages more than the best one found. Each team's room takes players rated
// between the lowest and the highest of those left, which bounds its average; the spread
// is at least the highest lower bound less the lowest upper bound. (Only for exact full
// splits, whose teams' sizes are known, with a team of more than one player: sp.bound.) On
// the role benchmark it prunes the search's steps from 670,000 to 280,000, the splits
// judged from 160,000 to 29,000.
func (s *shaper) cannotBeat(j int) bool {
	sp := &s.split
	if !sp.found || !sp.bound || j == len(sp.order) {
		return false
	}
	lo, hi := math.Inf(-1), math.Inf(1) // the highest lower bound, the lowest upper bound
	for k, u := range sp.used {
		size := float64(sp.info.sizes[k])
		room := size - float64(u)
		lo = max(lo, (sp.sum[k]+room*sp.remLo[j])/size)
		hi = min(hi, (sp.sum[k]+room*sp.remHi[j])/size)
	}
	// A margin far above rounding: a split within it of the best is not pruned.
	return lo-hi > sp.spread+1e-6
}

// leaf judges a complete split: the least spread of averages among the valid ones.
func (s *shaper) leaf() {
	sp := &s.split
	for k, u := range sp.used {
		if u < sp.mins[k] || sp.full && u != sp.info.sizes[k] {
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
	for k, u := range sp.used {
		if u == 0 {
			continue
		}
		avg := sp.sum[k] / float64(u)
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
		for m, i := range sp.g {
			largest[sp.team[m]] = max(largest[sp.team[m]], s.live[i].size)
			bound = bound || d.bound[i]
		}
		lo, hi := math.MaxInt, 0
		for k := range sp.info.sizes {
			if sp.used[k] > 0 {
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
	if s.fill == nil {
		return s.compositionOK(nil, nil)
	}
	for k, seats := range s.split.seats {
		if seats&s.fill.teams[k].met == 0 {
			return false
		}
	}
	return true
}

// compositionOK checks each team's composition on the split in sp.team; with roles, it
// writes each player's role there: member m's player p at roles[at[m]+p].
func (s *shaper) compositionOK(roles []int8, at []int) bool {
	sp := &s.split
	for k := range sp.info.sizes {
		if !sp.info.comp[k] && roles == nil {
			continue
		}
		sp.players = sp.players[:0]
		for m, i := range sp.g {
			if int(sp.team[m]) == k {
				sp.players = append(sp.players, s.rolesOf(&s.live[i])...)
			}
		}
		if len(sp.players) == 0 {
			continue
		}
		sp.roleOut = scratch.Resize(sp.roleOut, len(sp.players))
		if sp.info.comp[k] {
			all, covered := matchrules.FitRoles(sp.players, sp.info.lo[k], sp.info.hi[k], sp.roleOut)
			if !all || covered < sp.info.loSum[k] {
				return false
			}
		} else {
			for p := range sp.players {
				sp.roleOut[p] = -1
				if rs := &sp.players[p]; rs.Len() > 0 {
					sp.roleOut[p] = int8(rs.Roles()[0])
				}
			}
		}
		if roles != nil {
			from := 0
			for m, i := range sp.g {
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
		for k, u := range sp.used {
			if u == 0 {
				continue
			}
			avg := sp.sum[k] / float64(u)
			if hiK < 0 || avg > sp.sum[hiK]/float64(sp.used[hiK]) {
				hiK = k
			}
			if loK < 0 || avg < sp.sum[loK]/float64(sp.used[loK]) {
				loK = k
			}
		}
		if hiK == loK {
			return
		}
		bestA, bestB, best := -1, -1, sp.spread
		for a := range sp.g {
			if int(sp.team[a]) != hiK {
				continue
			}
			for b := range sp.g {
				x, y := &s.live[sp.g[a]], &s.live[sp.g[b]]
				if int(sp.team[b]) != loK || x.size != y.size || x.total <= y.total {
					continue
				}
				s.swap(a, b, hiK, loK)
				if spread := s.spreadOf(); spread < best && s.partyMixKept() && s.compositionOK(nil, nil) {
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
	d := s.live[sp.g[a]].total - s.live[sp.g[b]].total
	sp.team[a], sp.team[b] = int8(to), int8(from)
	sp.sum[from] -= d
	sp.sum[to] += d
}

// recount sets used and sum from sp.team.
func (s *shaper) recount() {
	sp := &s.split
	clear(sp.used)
	clear(sp.sum)
	for m, i := range sp.g {
		sp.used[sp.team[m]] += s.live[i].size
		sp.sum[sp.team[m]] += s.live[i].total
	}
}

func (s *shaper) partyMixKept() bool { k, _ := s.partyMixBroken(); return k < 0 }
