package twoteam

import (
	"math"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// balanceHolds checks a match of the tickets at positions c (the anchor first) whose team
// averages differ by avgDiff against the default bound (matchrules.DefaultBalance), in a
// queue without a team_balance rule (whose own check is matchRulesHold's); a match over it
// is turned down, the first of an anchor's walk reported as a wait on the teams.
func (p *pass) balanceHolds(c []int32, avgDiff float64) bool {
	if p.hasBalanceRule || !p.holdsParty(c) {
		return true
	}
	a := &p.nodes[c[0]]
	bound := matchrules.DefaultBalance * a.interval
	// Sums in float64: a bound of 0 (an interval of 0, every rating the anchor's) is met up
	// to their rounding.
	if avgDiff <= bound+1e-9*(1+math.Abs(a.rating)) {
		return true
	}
	p.lastOverBound = true
	if p.turnedDown.Rule == "" {
		p.turnedDown = matchpool.Wait{Rule: matchrules.WaitTeams, Kind: matchrules.WaitTeams,
			Candidates: len(c) - 1, Found: true, Value: avgDiff, Tolerance: bound}
	}
	return false
}

// pickClass makes the match of anchor a's pick p.chosen in class k (the walk's candidates
// w in the classes wm, its cursor o at the next candidate), or a more even one: the first
// pick of a class that holds a party and whose teams differ by more than evenEnough of the
// anchor's interval has the class's candidates looked ahead (lookAhead), and their most
// even match is tried first, the pick then if that one broke a rule judged on the match.
// When the most even match breaks the balance (balanceHolds), the most even match of solo
// players alone, which the balance does not bind, is tried; without one, when the search
// held every candidate of the class, the class is exhausted: no other pick of it is tried.
// It reports whether a match was made.
func (p *pass) pickClass(a int32, w []int32, wm []uint64, k int, o cursor) bool {
	team0 := p.splitOf(p.chosen)
	if p.lookedAhead>>k&1 != 0 || !p.worthLookingAhead(a, team0) {
		return p.makeMatchSplit(p.chosen, team0)
	}
	p.lookedAhead |= 1 << k
	p.picked = append(p.picked[:0], p.chosen...)
	ran, better := p.lookAhead(a, w, wm, k, o, team0)
	switch {
	case better && p.makeMatch(p.chosen):
		return true
	case better && !p.lastOverBound: // the most even broke a rule: the pick
		p.chosen = append(p.chosen[:0], p.picked...)
		return p.makeMatchSplit(p.chosen, team0)
	case !better && p.makeMatchSplit(p.chosen, team0):
		return true
	case !better && !p.lastOverBound || !ran:
		return false
	}
	if p.evenestSolos(a) {
		return p.makeMatch(p.chosen)
	}
	if p.sawEvery {
		p.exhausted |= 1 << k
	}
	return false
}

// evenestSolos sets p.chosen to the most even match of anchor a, a solo, with the solo
// players among the candidates the look-ahead searched (p.around), and reports whether
// there is one.
func (p *pass) evenestSolos(a int32) bool {
	an := &p.nodes[a]
	if an.size > 1 {
		return false
	}
	solos := p.solos[:0]
	for _, c := range p.around {
		if p.nodes[c].size == 1 {
			solos = append(solos, c)
		}
	}
	p.solos = solos
	set, _, ok := p.evenestOf(a, solos)
	if !ok {
		return false
	}
	p.chosen = append(p.chosen[:0], a)
	for i, c := range solos {
		if set>>i&1 != 0 {
			p.chosen = append(p.chosen, c)
		}
	}
	return true
}

// evenestOf is the evener's most even match of anchor a with some of cands (bit i for
// cands[i]), the teams' difference, and the tolerance of the sums' rounding it was found
// to.
func (p *pass) evenestOf(a int32, cands []int32) (set uint32, diff float64, ok bool) {
	an := &p.nodes[a]
	e := &p.evener
	e.sizes, e.totals = e.sizes[:0], e.totals[:0]
	for _, c := range cands {
		e.sizes = append(e.sizes, int(p.nodes[c].size))
		e.totals = append(e.totals, p.nodes[c].total)
	}
	if p.avoid != nil && p.avoidsAny(a, cands) {
		return p.evenestApart(a, cands, p.roundingOf(a, cands))
	}
	return e.evenest(p.teamSize, int(an.size), an.total, p.roundingOf(a, cands))
}

// roundingOf is the tolerance below which two sums of the ratings of anchor a and cands
// are the same but for their rounding.
func (p *pass) roundingOf(a int32, cands []int32) float64 {
	scale := 1 + math.Abs(p.nodes[a].total)
	for _, c := range cands {
		scale += math.Abs(p.nodes[c].total)
	}
	return 1e-9 * scale
}

// worthLookingAhead: the pick p.chosen of anchor a (split as team0) holds a party, its
// teams differ by more than evenEnough of the anchor's interval, and it is few enough
// tickets for the search.
func (p *pass) worthLookingAhead(a int32, team0 uint32) bool {
	if len(p.chosen) > lookAheadTickets+1 || !p.holdsParty(p.chosen) {
		return false
	}
	return p.splitDifference(p.chosen, team0) > evenEnough*p.nodes[a].interval*float64(p.teamSize)
}

// lookAhead searches the candidates of anchor a's class k walked (w, wm) and the next ones
// its cursor o meets, up to lookAheadTickets in all, for their most even match, and sets
// p.chosen to it when it is more even than the pick (split as team0): ran says whether it
// searched (the class's walked candidates fit), better whether it set p.chosen. Of equally
// even matches (to the sums' rounding) the pick is kept, then the match whose farthest
// ticket in the walk's order is the nearest, and so on (the least mask of the candidates,
// bit i for the i-th walked). p.sawEvery says whether the search held every candidate of the
// class within the anchor's interval, p.around holds those it searched.
func (p *pass) lookAhead(a int32, w []int32, wm []uint64, k int, o cursor, team0 uint32) (ran, better bool) {
	p.sawEvery = false
	around := p.around[:0]
	for i, c := range w {
		if wm[i]>>k&1 != 0 {
			around = append(around, c)
		}
	}
	if len(around) > lookAheadTickets {
		p.around = around
		return false, false
	}
	around, p.sawEvery = p.walkOn(a, k, o, around)
	p.around = around
	if len(around) == len(p.chosen)-1 { // the pick's own: no other match to choose
		return true, false
	}
	set, diff, ok := p.evenestOf(a, around)
	if !ok || diff >= p.splitDifference(p.chosen, team0)-p.roundingOf(a, around) {
		return true, false
	}
	p.chosen = append(p.chosen[:0], a)
	for i, c := range around {
		if set>>i&1 != 0 {
			p.chosen = append(p.chosen, c)
		}
	}
	return true, true
}

// walkOn appends to around the candidates of anchor a's class k that the walk's cursor o
// meets next, up to lookAheadTickets in all, and reports whether none is left within the
// anchor's interval after them.
func (p *pass) walkOn(a int32, k int, o cursor, around []int32) ([]int32, bool) {
	ra, iva := p.nodes[a].rating, p.nodes[a].interval
	for {
		dl, dh := math.Inf(1), math.Inf(1)
		if o.left >= 0 {
			dl = matchrules.Distance(ra, p.nodes[o.left].rating)
		}
		if o.right >= 0 {
			dh = matchrules.Distance(ra, p.nodes[o.right].rating)
		}
		if dl > iva && dh > iva {
			return around, true
		}
		c, d := o.step(p, dl, dh)
		if m, _ := p.admit(a, c, d); m>>k&1 != 0 {
			if len(around) == lookAheadTickets {
				return around, false
			}
			around = append(around, c)
		}
	}
}

// splitDifference is |difference of the team totals| of the tickets at c split as team0
// says, summed by tickets.
func (p *pass) splitDifference(c []int32, team0 uint32) float64 {
	d := 0.0
	for i, pos := range c {
		if team0>>i&1 != 0 {
			d += p.nodes[pos].total
		} else {
			d -= p.nodes[pos].total
		}
	}
	return math.Abs(d)
}

// holdsParty says whether a ticket at positions c has more than one player.
func (p *pass) holdsParty(c []int32) bool {
	for _, pos := range c {
		if p.nodes[pos].size > 1 {
			return true
		}
	}
	return false
}
