package shaped

import (
	"math"
	"math/bits"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// serve searches a match for anchor a (Run describes how).
func (s *shaper) serve(a int32) {
	x := &s.live[a]
	for k := range s.rules {
		if d := &s.rules[k]; d.kind == walkIntersect && d.bound[a] && d.values(a) < d.minCommon {
			s.addWait(a, matchpool.WaitOn(d.rule)) // no candidate can help: "fewer values than min_common"
			return
		}
	}
	capacity := s.capacity()
	mins, need := s.minSizes(s.now-x.since, s.mins)
	s.mins = mins
	g := s.resetGroup(&s.walkGroup, a)
	s.candidates = s.candidates[:0]
	s.turnedDown, s.turnDowns, s.lookedAhead, s.exhausted = matchpool.Wait{}, 0, false, false
	stages := &s.stages
	stages.reset(s.stageAvoid())
	left, right := s.nodes[a].prev, s.nodes[a].next
	if r := s.scarceRole(a); r >= 0 {
		s.addWait(a, matchpool.Wait{Rule: matchrules.WaitTeams, Kind: matchrules.WaitTeams, Role: s.roles[r]})
		return
	}
	walked, grew := 0, 0 // grew: when the group last took a ticket
	for ; (left >= 0 || right >= 0) && walked < maxWalk && walked-grew < maxStall; walked++ {
		c := s.nearer(a, &left, &right)
		if c < 0 {
			break
		}
		stage := s.acceptable(a, c)
		stages.add(stage, int(s.nodes[c].size))
		if stage != 0 {
			continue
		}
		if len(s.candidates) <= fallbackCandidates {
			s.candidates = append(s.candidates, c)
		}
		if s.fits(g, c, capacity) != 0 {
			continue
		}
		s.add(g, c)
		grew = walked
		if g.players < capacity {
			continue
		}
		if s.tryFullMatch(a, g, mins, left, right) {
			return
		}
		g = s.regroup(a, g.members[1:len(g.members)-1]) // without the last: its split failed
		if s.turnDowns >= maxTurnDowns || s.exhausted {
			break
		}
	}
	if need < capacity && g.players >= need && s.tryMatch(g, mins, false) {
		return
	}
	if len(s.candidates) <= fallbackCandidates && s.playersOf(a, s.candidates) >= need && s.exhaustive(a, capacity, need) {
		return
	}
	s.addWait(a, s.why(a, stages, need))
}

// nearer returns the nearer in rating of the walk's next candidates on either side (the
// older on a tie) and moves past it; a side ends beyond the anchor's interval.
func (s *shaper) nearer(a int32, left, right *int32) int32 {
	x := &s.live[a]
	dl, dr := math.Inf(1), math.Inf(1)
	if *left >= 0 {
		if dl = x.mean - s.nodes[*left].mean; dl > x.interval {
			*left, dl = -1, math.Inf(1)
		}
	}
	if *right >= 0 {
		if dr = s.nodes[*right].mean - x.mean; dr > x.interval {
			*right, dr = -1, math.Inf(1)
		}
	}
	switch {
	case *left < 0 && *right < 0:
		return -1
	case *right < 0 || dl < dr || dl == dr && s.live[*left].since <= s.live[*right].since:
		c := *left
		*left = s.nodes[c].prev
		return c
	default:
		c := *right
		*right = s.nodes[c].next
		return c
	}
}

// acceptable judges candidate c against the anchor alone: 0 when it may join, else the
// first stage that stops it.
func (s *shaper) acceptable(a, c int32) int {
	x, y := &s.nodes[a], &s.nodes[c]
	if matchrules.Distance(x.mean, y.mean) > y.interval { // within the anchor's: the walk stops at its interval
		return stageInterval
	}
	if s.latency && s.live[a].regions&s.live[c].regions == 0 { // without latency every mask is all ones
		return stageLatency
	}
	for k := range s.rules {
		d := &s.rules[k]
		if k == s.partitionRule || !d.always && (!d.bound[a] || !d.bound[c]) {
			continue // the walk passes only tickets of the anchor's value of s.partitionRule
		}
		ok := true
		switch d.kind {
		case walkEqual:
			ok = d.valueID[a] == d.valueID[c]
		case walkIntersect:
			if d.listAsBits {
				ok = bits.OnesCount64(d.listSet[a]&d.listSet[c]) >= d.minCommon
			} else {
				ok = len(intersection(d.list[a], d.list[c])) >= d.minCommon
			}
		case walkDistance:
			ok = matchrules.Distance(d.number[a], d.number[c]) <= min(d.tolerance[a], d.tolerance[c])
		}
		if !ok {
			return stageRules + k
		}
	}
	if s.avoid != nil && !s.avoid.Team && s.avoid.Apart(s.live[a].input, s.live[c].input) {
		return s.stageAvoid()
	}
	return 0
}

// regroup is the group of the anchor and the tickets given.
func (s *shaper) regroup(a int32, members []int32) *group {
	kept := append(s.keptBuf[:0], members...)
	s.keptBuf = kept
	g := s.resetGroup(&s.walkGroup, a)
	for _, m := range kept {
		s.add(g, m)
	}
	return g
}

// tryMatch splits the group and makes its match, or records the rule that turned it down.
func (s *shaper) tryMatch(g *group, mins []int, full bool) bool {
	team, exact, ok, turned := s.splitGroup(g.members, mins, full)
	return s.made(g, team, exact, ok, turned)
}

// exhaustive searches every subset of the anchor's acceptable candidates (s.candidates, nearest
// first) for a match: a full one first, then one at the current minimum sizes.
func (s *shaper) exhaustive(a int32, capacity, need int) bool {
	for _, full := range []bool{true, false} {
		if !full && need >= capacity {
			break
		}
		nodes := 0
		var grow func(g *group, j int) bool
		grow = func(g *group, j int) bool {
			if nodes++; nodes > fallbackNodes {
				return false
			}
			if full && g.players == capacity || !full && g.players >= need && j == len(s.candidates) {
				return s.tryMatch(g, s.mins, full)
			}
			if j == len(s.candidates) {
				return false
			}
			c := s.candidates[j]
			if s.fits(g, c, capacity) == 0 {
				h := s.searchGroup(j + 1)
				g.copyTo(h)
				s.add(h, c)
				if grow(h, j+1) {
					return true
				}
			}
			return grow(g, j+1)
		}
		if grow(s.resetGroup(s.searchGroup(0), a), 0) {
			return true
		}
	}
	return false
}

// searchGroup is the exhaustive search's group at depth d (after d candidates), kept from
// one anchor to the next.
func (s *shaper) searchGroup(d int) *group {
	for len(s.searchGroups) <= d {
		s.searchGroups = append(s.searchGroups, new(group))
	}
	return s.searchGroups[d]
}

// stageCount counts the candidates (and their players) each stage stopped, by stage.
type stageCount struct {
	seen, seenPlayers int
	by                [][2]int
}

func (c *stageCount) reset(stages int) {
	c.seen, c.seenPlayers = 0, 0
	c.by = scratch.Resize(c.by, stages+1)
	clear(c.by)
}

func (c *stageCount) add(stage, players int) {
	c.seen++
	c.seenPlayers += players
	if stage == 0 || stage >= len(c.by) {
		return
	}
	c.by[stage][0]++
	c.by[stage][1] += players
}

// why names the first stage after which the candidates left cannot fill the anchor's
// match by their players alone, or else the rule that turned a split down, or else the
// teams.
func (s *shaper) why(a int32, c *stageCount, need int) matchpool.Wait {
	left, players := c.seen, c.seenPlayers+s.live[a].size
	for stage := stageInterval; stage <= s.stageAvoid(); stage++ {
		var w matchpool.Wait
		switch {
		case stage == s.stageAvoid():
			if s.avoid == nil || s.avoid.Team {
				continue
			}
			w = matchpool.Wait{Rule: matchrules.WaitAvoid, Kind: matchrules.WaitAvoid}
		case stage == stageInterval:
			w = matchpool.Wait{Rule: matchrules.WaitInterval, Kind: matchrules.WaitInterval}
		case stage == stageLatency:
			w = matchpool.Wait{Rule: matchrules.WaitLatency, Kind: matchrules.WaitLatency}
		default:
			w = matchpool.WaitOn(s.rules[stage-stageRules].rule)
		}
		if stage == stageLatency && !s.latency {
			continue
		}
		w.Candidates = left
		x := c.by[stage]
		left, players = left-x[0], players-x[1]
		if players < need {
			return w
		}
	}
	if s.turnedDown.Rule != "" {
		return s.turnedDown
	}
	return matchpool.Wait{Rule: matchrules.WaitTeams, Kind: matchrules.WaitTeams, Candidates: left}
}

// makeMatch records the group's match, split as team says, and takes its tickets.
func (s *shaper) makeMatch(g *group, team []int8, exact bool) {
	m := matchpool.Match{Tickets: s.ticketArena.Take(len(g.members))[:0], Shaped: s.teamArena.Take(len(s.cfg.Shape)), Exact: exact,
		Region: s.region(g.members, g.regions), Attributes: s.attributes(g)}
	var used [matchrules.MaxTeams]int // each team's players, to cut its slots from one array
	for mi, i := range g.members {
		used[team[mi]] += s.live[i].size
	}
	for k := range m.Shaped {
		m.Shaped[k].Players = s.slotArena.Take(used[k])[:0]
		if len(s.roles) > 0 {
			m.Shaped[k].Roles = s.nameArena.Take(used[k])[:0]
		}
	}
	var roles []int8
	if n := 0; len(s.roles) > 0 {
		s.roleAt, n = s.roleAt[:0], 0
		for _, i := range g.members {
			s.roleAt = append(s.roleAt, n)
			n += s.live[i].size
		}
		s.matchRoles = scratch.Resize(s.matchRoles, n)
		roles = s.matchRoles
		s.compositionOK(roles, s.roleAt) // the split kept the compositions: this names the roles
	}
	for k, d := range s.cfg.Shape {
		m.Shaped[k].Name = d.Name
	}
	for mi, i := range g.members {
		x := &s.live[i]
		m.Tickets = append(m.Tickets, int(x.input))
		t := &m.Shaped[team[mi]]
		for p, r := range s.ratings[x.ratingsAt : x.ratingsAt+int32(x.size)] {
			t.Players = append(t.Players, matchpool.Slot{Ticket: int(x.input), Player: p})
			t.Total += r
			if roles != nil {
				name := ""
				if r := roles[s.roleAt[mi]+p]; r >= 0 {
					name = s.roles[r]
				}
				t.Roles = append(t.Roles, name)
			}
		}
	}
	loT, hiT, loA, hiA := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for k := range m.Shaped {
		t := &m.Shaped[k]
		t.OpenSlots = s.cfg.Shape[k].Size - len(t.Players)
		if len(t.Players) == 0 {
			continue
		}
		avg := t.Total / float64(len(t.Players))
		loT, hiT, loA, hiA = min(loT, t.Total), max(hiT, t.Total), min(loA, avg), max(hiA, avg)
	}
	m.SkillDifference, m.AverageDifference = hiT-loT, hiA-loA
	s.matches = append(s.matches, m)
	s.matchRank = append(s.matchRank, s.anchorRank)
	for _, i := range g.members {
		s.take(i)
	}
}

// attributes are what the match's equal and intersect rules agreed on, as Match.Attributes
// says: of the tickets each rule binds, or of all when it binds none. They are cut from
// arenas: a pass makes a match per ten players.
func (s *shaper) attributes(g *group) []matchpool.MatchAttribute {
	if len(s.reported) == 0 {
		return nil
	}
	out := s.attrArena.Take(len(s.reported))[:0]
	for _, k := range s.reported {
		d := &s.rules[k]
		if slices.ContainsFunc(out, func(a matchpool.MatchAttribute) bool { return a.Name == d.rule.Attribute }) {
			continue // an earlier rule reported the attribute
		}
		// The rule judges the tickets it binds, or all of them when it binds none.
		all := d.always || !slices.ContainsFunc(g.members, func(i int32) bool { return d.bound[i] })
		switch d.rule.Kind {
		case matchrules.RuleEqual:
			id := int32(-1)
			for _, i := range g.members {
				if !all && !d.bound[i] {
					continue
				}
				if id < 0 {
					id = d.valueID[i]
				} else if d.valueID[i] != id {
					id = -2
					break
				}
			}
			if id < 0 {
				continue
			}
			v := matchrules.StringValue("")
			if d.nums != nil {
				v = matchrules.NumberValue(d.nums[id])
			} else {
				v.Str = d.names[id]
			}
			out = append(out, matchpool.MatchAttribute{Name: d.rule.Attribute, Value: v})
		case matchrules.RuleIntersect:
			v := matchrules.ListValue()
			v.List = s.common(d, g.members, all)
			out = append(out, matchpool.MatchAttribute{Name: d.rule.Attribute, Value: v})
		}
	}
	return out
}

// common is the values of intersect rule d that the members it judges (all, or those it
// binds) all list, sorted.
func (s *shaper) common(d *shapeRule, members []int32, all bool) []string {
	var list []string
	if d.listAsBits {
		set := uint64(math.MaxUint64)
		for _, i := range members {
			if all || d.bound[i] {
				set &= d.listSet[i]
			}
		}
		list = s.nameArena.Take(bits.OnesCount64(set))[:0]
		for _, id := range d.byName {
			if set&(1<<id) != 0 {
				list = append(list, d.names[id])
			}
		}
	} else {
		var ids []int32
		first := true
		for _, i := range members {
			switch {
			case !all && !d.bound[i]:
			case first:
				ids, first = d.list[i], false
			default:
				ids = intersection(ids, d.list[i])
			}
		}
		list = s.nameArena.Take(len(ids))[:0]
		for _, id := range ids {
			list = append(list, d.names[id])
		}
		slices.Sort(list)
	}
	if list == nil {
		list = []string{} // an empty arena's cut: "no value in common" is an empty list
	}
	return list
}

// playersOf is the players of anchor a and the tickets cs.
func (s *shaper) playersOf(a int32, cs []int32) int {
	n := s.live[a].size
	for _, c := range cs {
		n += s.live[c].size
	}
	return n
}

// scarceRole is a role that fewer searching players of the anchor's partition (its value
// of the partitioning equal rule) play than the shape's compositions need, -1 for none:
// then no walk can fill the teams.
func (s *shaper) scarceRole(a int32) int {
	if s.roleMins == nil {
		return -1
	}
	counts := s.searchingByRole[s.partOf(a)]
	for r, need := range s.roleMins {
		if counts[r] < int32(need) {
			return r
		}
	}
	return -1
}

// countRoles adds d times ticket i's players to the role counts of its partition.
func (s *shaper) countRoles(i int32, d int32) {
	if s.roleMins == nil {
		return
	}
	counts := s.searchingByRole[s.partOf(i)]
	roles := s.rolesOf(&s.live[i])
	for p := range roles {
		rs := roles[p].Roles()
		if len(rs) == 0 {
			for r := range counts {
				counts[r] += d
			}
			continue
		}
		for _, r := range rs {
			counts[r] += d
		}
	}
}
