package shaped

import (
	"math"
	"math/bits"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// group is the tickets an anchor has taken, and what the rules that bind them require of
// the next: a state a walk grows and the exhaustive search copies.
type group struct {
	members   []int32
	players   int
	regions   uint64
	equalID   []int32               // per rule: the equal value of the tickets it binds, -1 none yet
	common    []uint64              // per rule: the intersect values its bound tickets share (bits)
	lists     [][]int32             // per rule, where the values are more than 64: as a list
	boundAny  []bool                // per rule: some ticket of the group is bound
	low, high []float64             // per rule: the distance values' range of the bound tickets
	tolerance []float64             // and their smallest tolerance
	room      []int                 // per team, the places a packing of the parties leaves
	refused   []uint64              // role signatures rolesCanFill refused since the group last grew
	roles     []matchrules.RoleList // with compositions, the roles of its players, in order
	// an assignment of those roles (roleFit's), its count per role and the minimums it met
	roleCounted bool
	roleCount   [matchrules.MaxRoles]int
	roleCovered int
	fill        []uint64 // with a fill space, its states (shaped_fill.go)
	projection  []uint64 // and each team's projection of them
}

// resetGroup makes g the group of anchor a alone, reusing its arrays.
func (s *shaper) resetGroup(g *group, a int32) *group {
	n := len(s.rules)
	g.members, g.players, g.regions, g.roles = g.members[:0], 0, math.MaxUint64, g.roles[:0]
	g.roleCounted = false
	if want := s.capacity() + matchrules.MaxTeamSize; s.roleMins != nil && cap(g.roles) < want {
		g.roles = make([]matchrules.RoleList, 0, want) // room for a candidate's past the group's: no copy per check
	}
	g.equalID, g.common, g.lists, g.boundAny = scratch.Resize(g.equalID, n), scratch.Resize(g.common, n), scratch.Resize(g.lists, n), scratch.Resize(g.boundAny, n)
	g.low, g.high, g.tolerance = scratch.Resize(g.low, n), scratch.Resize(g.high, n), scratch.Resize(g.tolerance, n)
	for i := range n {
		g.equalID[i], g.common[i], g.lists[i], g.boundAny[i] = -1, 0, nil, false
		g.low[i], g.high[i], g.tolerance[i] = math.Inf(1), math.Inf(-1), math.Inf(1)
	}
	g.room = append(g.room[:0], s.split.shape.sizes...)
	if s.fillSpace != nil {
		s.resetFill(g)
	}
	s.add(g, a)
	return g
}

// copyTo makes c a copy of g, reusing c's arrays: the exhaustive search copies a group at
// every ticket it tries, and keeps a group a depth.
func (g *group) copyTo(c *group) {
	was := *c
	*c = *g
	c.members = append(was.members[:0], g.members...)
	c.equalID, c.common, c.boundAny = append(was.equalID[:0], g.equalID...), append(was.common[:0], g.common...), append(was.boundAny[:0], g.boundAny...)
	c.lists = append(was.lists[:0], g.lists...) // the lists are never written: shared
	c.low, c.high, c.tolerance = append(was.low[:0], g.low...), append(was.high[:0], g.high...), append(was.tolerance[:0], g.tolerance...)
	c.room, c.refused = append(was.room[:0], g.room...), append(was.refused[:0], g.refused...)
	c.roles = append(was.roles[:0], g.roles...)
	c.fill, c.projection = append(was.fill[:0], g.fill...), append(was.projection[:0], g.projection...)
}

// add takes ticket i into the group (fits said it may).
func (s *shaper) add(g *group, i int32) {
	n := &s.nodes[i] // read by the walk: in cache, where the sticket may not be
	g.members = append(g.members, i)
	g.players += int(n.size)
	if s.latency { // without, every mask is all ones
		g.regions &= s.live[i].regions
	}
	if s.fillSpace != nil {
		s.seatAll(g, n.fillType, int(n.size))
	} else {
		x := &s.live[i]
		g.refused = g.refused[:0] // a larger group refuses differently
		if s.roleMins != nil {
			g.roles = append(g.roles, s.rolesOf(x)...)
			s.countGroupRoles(g)
		}
		if k := bestFit(g.room, x.size); k >= 0 {
			g.room[k] -= x.size
		} else { // fits found a packing the best fit did not
			s.repack(g)
		}
	}
	for k := range s.rules {
		d := &s.rules[k]
		if k == s.partitionRule || !d.always && !d.bound[i] {
			continue // fits does not read the group's value of s.partitionRule: it is the anchor's
		}
		first := !g.boundAny[k]
		g.boundAny[k] = true
		switch d.kind {
		case walkEqual:
			g.equalID[k] = d.valueID[i]
		case walkIntersect:
			switch {
			case d.listAsBits && first:
				g.common[k] = d.listSet[i]
			case d.listAsBits:
				g.common[k] &= d.listSet[i]
			case first:
				g.lists[k] = d.list[i]
			default:
				g.lists[k] = intersection(g.lists[k], d.list[i])
			}
		case walkDistance:
			g.low[k], g.high[k] = min(g.low[k], d.number[i]), max(g.high[k], d.number[i])
			g.tolerance[k] = min(g.tolerance[k], d.tolerance[i])
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
// it (stageLatency, stageRules+k, stageAvoid, or stageTeams).
func (s *shaper) fits(g *group, i int32, capacity int) int {
	n := &s.nodes[i]
	if g.players+int(n.size) > capacity {
		return stageTeams
	}
	if s.latency && g.regions&s.live[i].regions == 0 { // without latency every mask is all ones
		return stageLatency
	}
	for k := range s.rules {
		d := &s.rules[k]
		if k == s.partitionRule || !d.always && !d.bound[i] {
			continue // the group's tickets are all of the anchor's value of s.partitionRule
		}
		if !g.boundAny[k] {
			if d.kind == walkIntersect && d.values(i) < d.minCommon {
				return stageRules + k // alone, its list is too short
			}
			continue
		}
		ok := true
		switch d.kind {
		case walkEqual:
			ok = g.equalID[k] == d.valueID[i]
		case walkIntersect:
			if d.listAsBits {
				ok = bits.OnesCount64(g.common[k]&d.listSet[i]) >= d.minCommon
			} else {
				ok = len(intersection(g.lists[k], d.list[i])) >= d.minCommon
			}
		case walkDistance:
			ok = max(g.high[k], d.number[i])-min(g.low[k], d.number[i]) <= min(g.tolerance[k], d.tolerance[i])
		}
		if !ok {
			return stageRules + k
		}
	}
	if s.avoid != nil && !s.avoid.Team && s.meetsGroup(g.members, i) {
		return s.stageAvoid()
	}
	if s.fillSpace != nil {
		if !s.canSeat(g, n) {
			return stageTeams
		}
		return 0
	}
	if x := &s.live[i]; !s.packs(g, x) || !s.rolesCanFill(g, x, capacity) {
		return stageTeams
	}
	return 0
}

// The stages that stop a candidate, in the order an anchor's walk judges them (0: none,
// the candidate is acceptable): the interval, latency, the queue's rules in their order,
// and the teams, which cannot take its party or its roles.
const (
	stageInterval = 1
	stageLatency  = 2
	stageRules    = 3 // rule k's is stageRules+k
	stageTeams    = math.MaxInt32
)

// packs says whether the group's parties and x's pack into the teams' sizes: at once when
// the best fit of x into the group's packing finds room, else by trying every packing.
func (s *shaper) packs(g *group, x *sticket) bool {
	if bestFit(g.room, x.size) >= 0 {
		return true
	}
	sizes := s.packSizes(g.members)
	sizes = append(sizes, x.size)
	return s.packAll(sizes) != nil
}

// bestFit is the team with the least room that takes a party of size, -1 for none.
func bestFit(room []int, size int) int {
	k := -1
	for c, r := range room {
		if r >= size && (k < 0 || r < room[k]) {
			k = c
		}
	}
	return k
}

func (s *shaper) packSizes(members []int32) []int {
	sizes := s.sizesBuf[:0]
	for _, m := range members {
		sizes = append(sizes, s.live[m].size)
	}
	s.sizesBuf = sizes
	return sizes
}

// repack sets the group's room from a packing of all its parties.
func (s *shaper) repack(g *group) {
	if room := s.packAll(s.packSizes(g.members)); room != nil {
		copy(g.room, room)
	}
}

// packAll tries every packing of the parties of sizes (largest first) into the teams and
// returns the room the first one leaves, nil when none does (or 4,096 steps found none).
func (s *shaper) packAll(sizes []int) []int {
	slices.Sort(sizes)
	slices.Reverse(sizes)
	room := append(s.roomBuf[:0], s.split.shape.sizes...)
	s.roomBuf = room
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
			if fit(j + 1) {
				return true
			}
			room[k] += sizes[j]
		}
		return false
	}
	if !fit(0) {
		return nil
	}
	return room
}

// rolesCanFill says whether, with x, the group's players can take roles that the shape's
// compositions together allow, and leave enough places for the minimums not yet met.
func (s *shaper) rolesCanFill(g *group, x *sticket, capacity int) bool {
	if s.roleMins == nil {
		return true
	}
	if slices.Contains(g.refused, x.rolesKey) {
		return false // a ticket of the same roles was refused by this same group
	}
	if x.size == 1 && g.roleCounted {
		// A solo takes a role with room in the group's own assignment: one whose minimum
		// is not met yet (that minimum's deficit falls with the room), or one below its
		// maximum while the room left still covers the deficit.
		deficit, room := s.roleMinSum-g.roleCovered, capacity-len(g.roles)-1
		for _, r := range soloRoles(x.soloRoles[0].Roles(), len(s.roles)) {
			if g.roleCount[r] < s.roleMins[r] || g.roleCount[r] < s.roleMaxes[r] && deficit <= room {
				return true
			}
		}
	}
	players := append(g.roles, s.rolesOf(x)...) // x's past the group's own, for this check only
	s.roleOut = scratch.Resize(s.roleOut, len(players))
	all, covered := matchrules.FitRoles(players, s.roleMins, s.roleMaxes, s.roleOut)
	ok := all && s.roleMinSum-covered <= capacity-len(players)
	if !ok {
		g.refused = append(g.refused, x.rolesKey)
	}
	return ok
}

// countGroupRoles assigns the group's players roles (roleFit) and keeps the counts, for
// rolesCanFill's quick check of a solo.
func (s *shaper) countGroupRoles(g *group) {
	s.roleOut = scratch.Resize(s.roleOut, len(g.roles))
	all, covered := matchrules.FitRoles(g.roles, s.roleMins, s.roleMaxes, s.roleOut)
	g.roleCounted, g.roleCovered, g.roleCount = all, covered, [matchrules.MaxRoles]int{}
	for _, r := range s.roleOut {
		if r >= 0 {
			g.roleCount[r]++
		}
	}
}

// soloRoles is a player's roles, or every role when he lists none.
func soloRoles(rs []uint8, n int) []uint8 {
	if len(rs) > 0 {
		return rs
	}
	return allRoles[:n]
}

var allRoles = func() (out [matchrules.MaxRoles]uint8) {
	for i := range out {
		out[i] = uint8(i)
	}
	return out
}()
