package twoteam

import (
	"math"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// The avoid lists (p.avoid): with scope match a candidate the anchor may not meet is turned
// away by the walk (admit, at stageAvoid), a ticket that may not meet one chosen already is
// passed over by choose, and a match that still holds such a pair is turned down
// (keepApart); with scope team the split keeps them on two teams, and a match no split
// keeps them apart in is turned down.

// stageAvoid is the stage of the walk's rejections by the avoid lists: after the rules.
func (p *pass) stageAvoid() int { return stageRules + len(p.rules) }

// meetsChosen: the ticket at pos may not meet one of p.chosen.
func (p *pass) meetsChosen(pos int32) bool { return p.meetsAny(pos, p.chosen) }

// meetsAny: the ticket at pos may not meet one at the positions of c.
func (p *pass) meetsAny(pos int32, c []int32) bool {
	in := p.nodes[pos].input
	if !p.avoid.Any(in) {
		return false
	}
	for _, c := range c {
		if p.avoid.Apart(in, p.nodes[c].input) {
			return true
		}
	}
	return false
}

// maxApartSplit bounds the tickets of a match whose split keepApart searches itself (every
// split, 2^(m-1)) when the most even one puts a pair on one team.
const maxApartSplit = 16

// keepApart checks the match of the tickets at c, split team0 (bit i set for c[i] on the
// anchor's team), against the avoid lists, and returns the split to make: team0, or with
// scope team the most even split that keeps every pair on two teams. ok false: no such
// split (or the match holds a pair, scope match), and the match is turned down.
func (p *pass) keepApart(c []int32, team0 uint32) (uint32, bool) {
	in := p.apartBuf[:0]
	for _, pos := range c {
		in = append(in, p.nodes[pos].input)
	}
	p.apartBuf = in
	side := func(k int) int { return int(team0 >> k & 1) }
	if p.avoid.Holds(in, side) {
		return team0, true
	}
	if p.avoid.Team && len(c) <= maxApartSplit {
		if s, ok := p.apartSplit(c, in); ok {
			return s, true
		}
	}
	if p.turnedDown.Rule == "" {
		p.turnedDown = matchpool.Wait{Rule: matchrules.WaitAvoid, Kind: matchrules.WaitAvoid, Candidates: len(c) - 1, Found: true}
	}
	return 0, false
}

// apartSplit is the most even split of the tickets at c (inputs in) that fills both teams,
// the anchor on team 0, and keeps every avoiding pair on two teams.
func (p *pass) apartSplit(c []int32, in []int32) (uint32, bool) {
	best, found := math.Inf(1), false
	var split uint32
	for m := uint32(1); m < 1<<len(c); m += 2 { // bit 0, the anchor, set
		n, diff := 0, 0.0
		for i, pos := range c {
			x := &p.nodes[pos]
			if m>>i&1 != 0 {
				n += int(x.size)
				diff += x.total
			} else {
				diff -= x.total
			}
		}
		if n != p.teamSize || math.Abs(diff) >= best {
			continue
		}
		if p.avoid.Holds(in, func(k int) int { return int(m >> k & 1) }) {
			best, split, found = math.Abs(diff), m, true
		}
	}
	return split, found
}

// avoidsAny: the anchor or a candidate has a pair among them.
func (p *pass) avoidsAny(a int32, cands []int32) bool {
	if p.avoid.Any(p.nodes[a].input) {
		return true
	}
	for _, c := range cands {
		if p.avoid.Any(p.nodes[c].input) {
			return true
		}
	}
	return false
}

// evenestApart is the evener's answer (evener.evenest) among the choices that keep the
// avoid lists: no pair in the match (scope match) or on one team (scope team). It tries
// every choice, 3^n for the n <= lookAheadTickets candidates: the meet in the middle cannot
// see a pair across its halves, and a look-ahead whose tickets avoid some is rare.
func (p *pass) evenestApart(a int32, cands []int32, tol float64) (set uint32, diff float64, ok bool) {
	t, an := p.teamSize, &p.nodes[a]
	n := len(cands)
	side := make([]int8, n) // 0 out, 1 the anchor's team, 2 the other
	best := math.Inf(1)
	var leaves []evenChoice // each complete choice kept: diff, and on onA the set
	var try func(i, na, nb int, d float64)
	try = func(i, na, nb int, d float64) {
		if i == n {
			if na == t && nb == t && p.choiceKeepsApart(a, cands, side) {
				var s uint32
				for k, x := range side {
					if x != 0 {
						s |= 1 << k
					}
				}
				best = min(best, math.Abs(d))
				leaves = append(leaves, evenChoice{diff: math.Abs(d), onA: s})
			}
			return
		}
		x := &p.nodes[cands[i]]
		side[i] = 0
		try(i+1, na, nb, d)
		if s := int(x.size); na+s <= t {
			side[i] = 1
			try(i+1, na+s, nb, d+x.total)
		}
		if s := int(x.size); nb+s <= t {
			side[i] = 2
			try(i+1, na, nb+s, d-x.total)
		}
		side[i] = 0
	}
	try(0, int(an.size), 0, an.total)
	if math.IsInf(best, 1) {
		return 0, 0, false
	}
	set = math.MaxUint32
	for _, l := range leaves {
		if l.diff <= best+tol {
			set = min(set, l.onA)
		}
	}
	return set, best, true
}

// choiceKeepsApart: the anchor (on team 1) and the candidates on the teams side gives (0:
// out) keep the avoid lists.
func (p *pass) choiceKeepsApart(a int32, cands []int32, side []int8) bool {
	in := p.nodes[a].input
	for i, c := range cands {
		if side[i] == 0 {
			continue
		}
		ci := p.nodes[c].input
		if p.avoid.Apart(in, ci) && (!p.avoid.Team || side[i] == 1) {
			return false
		}
		for j := i + 1; j < len(cands); j++ {
			if side[j] != 0 && p.avoid.Apart(ci, p.nodes[cands[j]].input) && (!p.avoid.Team || side[i] == side[j]) {
				return false
			}
		}
	}
	return true
}
