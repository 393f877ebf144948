package tick

import (
	"math"
	"slices"
)

// group is the tickets an anchor has taken, and what the rules that bind them require of
// the next: a state a walk grows and the exhaustive search copies.
type group struct {
	members []int32
	players int
	mask    uint64
	eq      []int32   // per rule: the equal value of the tickets it binds, -1 none yet
	common  []uint64  // per rule: the intersect values its bound tickets share (bits)
	lists   [][]int32 // per rule, where the values are more than 64: as a list
	any     []bool    // per rule: some ticket of the group is bound
	lo, hi  []float64 // per rule: the distance values' range of the bound tickets
	tol     []float64 // and their smallest tolerance
}

func (s *shaper) newGroup(a int32) *group {
	n := len(s.rules)
	g := &group{mask: math.MaxUint64, eq: make([]int32, n), common: make([]uint64, n), lists: make([][]int32, n),
		any: make([]bool, n), lo: make([]float64, n), hi: make([]float64, n), tol: make([]float64, n)}
	for i := range n {
		g.eq[i], g.lo[i], g.hi[i], g.tol[i] = -1, math.Inf(1), math.Inf(-1), math.Inf(1)
	}
	s.add(g, a)
	return g
}

func (g *group) clone() *group {
	c := *g
	c.members = slices.Clone(g.members)
	c.eq, c.common, c.any = slices.Clone(g.eq), slices.Clone(g.common), slices.Clone(g.any)
	c.lists = slices.Clone(g.lists)
	c.lo, c.hi, c.tol = slices.Clone(g.lo), slices.Clone(g.hi), slices.Clone(g.tol)
	return &c
}

// add takes ticket i into the group (fits said it may).
func (s *shaper) add(g *group, i int32) {
	x := &s.live[i]
	g.members = append(g.members, i)
	g.players += x.size
	g.mask &= x.mask
	for k := range s.rules {
		d := &s.rules[k]
		if !d.bound[i] {
			continue
		}
		first := !g.any[k]
		g.any[k] = true
		switch d.rule.Kind {
		case RuleEqual:
			g.eq[k] = d.id[i]
		case RuleIntersect:
			switch {
			case d.bits && first:
				g.common[k] = d.set[i]
			case d.bits:
				g.common[k] &= d.set[i]
			case first:
				g.lists[k] = d.list[i]
			default:
				g.lists[k] = intersection(g.lists[k], d.list[i])
			}
		case RuleDistance:
			g.lo[k], g.hi[k] = min(g.lo[k], d.num[i]), max(g.hi[k], d.num[i])
			g.tol[k] = min(g.tol[k], d.tol[i])
		}
	}
}

func intersection(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); ok {
			out = append(out, x)
		}
	}
	return out
}

// fits says whether ticket i may join the group: 0 when it may, else the stage that stops
// it (stageLatency, stageRules+k, or stageTeams).
func (s *shaper) fits(g *group, i int32, capacity int) int {
	x := &s.live[i]
	if g.players+x.size > capacity {
		return stageTeams
	}
	if g.mask&x.mask == 0 {
		return stageLatency
	}
	for k := range s.rules {
		d := &s.rules[k]
		if !d.bound[i] {
			continue
		}
		if !g.any[k] {
			if d.rule.Kind == RuleIntersect && len(d.list[i]) < d.rule.minCommon() {
				return stageRules + k // alone, its list is too short
			}
			continue
		}
		ok := true
		switch d.rule.Kind {
		case RuleEqual:
			ok = g.eq[k] == d.id[i]
		case RuleIntersect:
			if d.bits {
				ok = bits64(g.common[k]&d.set[i]) >= d.rule.minCommon()
			} else {
				ok = len(intersection(g.lists[k], d.list[i])) >= d.rule.minCommon()
			}
		case RuleDistance:
			ok = max(g.hi[k], d.num[i])-min(g.lo[k], d.num[i]) <= min(g.tol[k], d.tol[i])
		}
		if !ok {
			return stageRules + k
		}
	}
	if !s.packs(g, x) || !s.rolesCanFill(g, x, capacity) {
		return stageTeams
	}
	return 0
}

// stageTeams is the stage of a candidate whose party or roles the teams cannot take.
const stageTeams = math.MaxInt32

// packs says whether the group's parties and x's pack into the teams' sizes.
func (s *shaper) packs(g *group, x *sticket) bool {
	if x.size == 1 {
		solos := true
		for _, m := range g.members {
			solos = solos && s.live[m].size == 1
		}
		if solos {
			return true // the capacity check was enough
		}
	}
	sizes := make([]int, 0, len(g.members)+1)
	for _, m := range g.members {
		sizes = append(sizes, s.live[m].size)
	}
	sizes = append(sizes, x.size)
	slices.Sort(sizes)
	slices.Reverse(sizes)
	room := slices.Clone(s.split.info.sizes)
	nodes := 0
	var fit func(j int) bool
	fit = func(j int) bool {
		if j == len(sizes) {
			return true
		}
		if nodes++; nodes > 1<<12 {
			return false
		}
		for k := range room {
			if room[k] < sizes[j] || slices.Contains(room[:k], room[k]) {
				continue // the same room before k was tried
			}
			room[k] -= sizes[j]
			ok := fit(j + 1)
			room[k] += sizes[j]
			if ok {
				return true
			}
		}
		return false
	}
	return fit(0)
}

// rolesCanFill says whether, with x, the group's players can take roles that the shape's
// compositions together allow, and leave enough places for the minimums not yet met.
func (s *shaper) rolesCanFill(g *group, x *sticket, capacity int) bool {
	if s.roleLo == nil {
		return true
	}
	players := s.rolePlayers[:0]
	for _, m := range g.members {
		players = append(players, s.live[m].roles...)
	}
	players = append(players, x.roles...)
	s.rolePlayers = players
	out := make([]int8, len(players))
	all, covered := roleFit(players, s.roleLo, s.roleHi, out)
	return all && s.roleLoSum-covered <= capacity-len(players)
}

func bits64(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}
