package shaped

// The avoid lists (s.avoid): with scope match a candidate the anchor may not meet is turned
// away by the walk (acceptable, at stageAvoid) and one that may not meet a ticket of the
// group does not join it (fits), in the walk, the look-ahead and the exhaustive search
// alike; with scope team the split seats no ticket on a team holding one it may not meet
// (place, swaps), and a group no split keeps apart is turned down (matchrules.WaitAvoid).

// stageAvoid is the stage of the avoid lists, after the rules.
func (s *shaper) stageAvoid() int { return stageRules + len(s.rules) }

// meetsGroup: ticket i may not meet a ticket of members (live indices).
func (s *shaper) meetsGroup(members []int32, i int32) bool {
	in := s.live[i].input
	if !s.avoid.Any(in) {
		return false
	}
	for _, m := range members {
		if s.avoid.Apart(in, s.live[m].input) {
			return true
		}
	}
	return false
}

// apartOn: the split may not seat the ticket order[j] on team k, which holds one it may not
// meet among those seated before it.
func (s *shaper) apartOn(j, k int) bool {
	sp := &s.split
	in := s.live[sp.group[sp.order[j]]].input
	if !s.avoid.Any(in) {
		return false
	}
	for _, m := range sp.order[:j] {
		if int(sp.team[m]) == k && s.avoid.Apart(in, s.live[sp.group[m]].input) {
			sp.apartRefused = true
			return true
		}
	}
	return false
}

// apartKept: the split sp.team seats no two tickets that may not meet on one team.
func (s *shaper) apartKept() bool {
	if s.avoid == nil || !s.avoid.Team {
		return true
	}
	sp := &s.split
	for a, i := range sp.group {
		for b := a + 1; b < len(sp.group); b++ {
			if sp.team[a] == sp.team[b] && s.avoid.Apart(s.live[i].input, s.live[sp.group[b]].input) {
				return false
			}
		}
	}
	return true
}
