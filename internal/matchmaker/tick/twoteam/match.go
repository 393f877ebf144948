package twoteam

import (
	"math"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// makeMatch records the match of the tickets at positions c (the anchor first): the most
// even split, the pairs, the region; and takes the tickets out of the pass. With rules
// judged on the match (distance, team_balance) it first checks them, and a match that
// breaks one is not made: it reports whether the match was made.
func (p *pass) makeMatch(c []int32) bool {
	sp := &p.sp
	sp.sizes, sp.totals = sp.sizes[:0], sp.totals[:0]
	for _, pos := range c {
		sp.sizes = append(sp.sizes, int(p.nodes[pos].size))
		sp.totals = append(sp.totals, p.nodes[pos].total)
	}
	team0 := sp.split(p.t)

	t := p.t
	m := made{ids: int32(len(p.ids)), slots: int32(len(p.slots)), pairs: int32(len(p.pairs)),
		tickets: int32(len(c)), region: -1}
	for _, pos := range c {
		p.ids = append(p.ids, int(p.nodes[pos].in))
	}
	// Each team's players sorted by rating (then ticket, then player: a fixed order).
	var team [2][]member
	for side := range 2 {
		ms := p.members[side][:0]
		for i, pos := range c {
			if team0>>i&1 != uint32(1-side) {
				continue
			}
			n := &p.nodes[pos]
			for j := range int32(n.size) {
				r := n.total // a solo's rating; a party's are copied by position
				if n.size > 1 {
					r = p.rat[n.rat+j]
				}
				x := member{matchpool.Slot{Ticket: int(n.in), Player: int(j)}, r, n.iv}
				ms = append(ms, x)
				for q := len(ms) - 1; q > 0 && x.less(ms[q-1]); q-- { // at most 16 players
					ms[q], ms[q-1] = ms[q-1], x
				}
			}
		}
		team[side], p.members[side] = ms, ms
	}
	for side := range 2 {
		for _, x := range team[side] {
			p.slots = append(p.slots, x.slot)
		}
	}
	var tot0, tot1 float64
	for i := range t {
		x, y := team[0][i], team[1][i]
		tot0 += x.r
		tot1 += y.r
		p.pairs = append(p.pairs, matchpool.Pair{Players: [2]matchpool.Slot{x.slot, y.slot}, Difference: math.Abs(x.r - y.r),
			Interval: min(x.iv, y.iv)})
	}
	m.skill = math.Abs(tot0 - tot1)
	if p.matchLevel {
		p.picks++
		if !p.matchRulesHold(c, team0, m.skill/float64(t)) {
			p.ids, p.slots, p.pairs = p.ids[:m.ids], p.slots[:m.slots], p.pairs[:m.pairs]
			return false
		}
	}
	if r, _ := p.region(c, math.MaxUint64); r >= 0 {
		m.region = int8(r)
	}
	if p.ruled {
		m.attrs = p.matchAttributes(c)
	}
	p.made = append(p.made, m)
	for _, pos := range c {
		p.take(pos)
	}
	return true
}

// made is a match made, its parts in the pass's arrays until result copies them out.
type made struct {
	ids, slots, pairs int32 // where its tickets, players and pairs start
	tickets           int32
	region            int8 // -1: none
	skill             float64
	attrs             [2]int32 // its attributes are p.attrs[attrs[0]:attrs[1]]
}

// result copies the matches out of the pass's arrays (which it keeps for the next pass)
// into arrays of their own, as large as they need: a tick of a large queue usually makes
// few matches.
func (p *pass) result() []matchpool.Match {
	t := int32(p.t)
	ids, slots, pairs := slices.Clone(p.ids), slices.Clone(p.slots), slices.Clone(p.pairs)
	attrs, lists := slices.Clone(p.attrs), slices.Clone(p.attrList)
	for i, x := range p.attrs { // their lists share one array too (p.attrList grew meanwhile)
		if n := len(x.Value.List); n > 0 {
			attrs[i].Value.List = scratch.Span(lists, p.attrAt[i], int32(n))
		}
	}
	out := make([]matchpool.Match, len(p.made))
	for i, m := range p.made {
		x := matchpool.Match{
			Tickets:           scratch.Span(ids, m.ids, m.tickets),
			Teams:             [2][]matchpool.Slot{scratch.Span(slots, m.slots, t), scratch.Span(slots, m.slots+t, t)},
			Pairs:             scratch.Span(pairs, m.pairs, t),
			SkillDifference:   m.skill,
			AverageDifference: m.skill / float64(t),
		}
		if m.attrs[1] > m.attrs[0] {
			x.Attributes = scratch.Span(attrs, m.attrs[0], m.attrs[1]-m.attrs[0])
		}
		if m.region >= 0 {
			x.Region = p.regionNames[m.region]
		}
		out[i] = x
	}
	return out
}

// span is s[from:from+n], its capacity cut at its end so that no append reaches the next.
func span[T any](s []T, from, n int32) []T { return s[from : from+n : from+n] }

// member is a player of a match being made, with its rating and its ticket's interval.
type member struct {
	slot matchpool.Slot
	r    float64
	iv   float64
}

func (a member) less(b member) bool {
	if a.r != b.r {
		return a.r < b.r
	}
	if a.slot.Ticket != b.slot.Ticket {
		return a.slot.Ticket < b.slot.Ticket
	}
	return a.slot.Player < b.slot.Player
}

// take removes the ticket at pos from the pass: matched.
func (p *pass) take(pos int32) {
	p.nodes[pos].state = matched
	p.taken[p.nodes[pos].rank] = true
	pv, nx := p.nodes[pos].prev, p.nodes[pos].next
	if pv >= 0 {
		p.nodes[pv].next = nx
	}
	if nx >= 0 {
		p.nodes[nx].prev = pv
	}
	if p.part >= 0 {
		pv, nx := p.pprev[pos], p.pnext[pos]
		if pv >= 0 {
			p.pnext[pv] = nx
		}
		if nx >= 0 {
			p.pprev[nx] = pv
		}
	}
	s := int(p.nodes[pos].size)
	p.count[s]--
	if p.count[s] <= 2*p.t/s {
		p.feasible = [matchrules.MaxTeamSize + 1]int8{}
	}
	if p.greedy {
		p.tree.set(int(pos), none)
	}
}

// splitter finds the most even split of a match's tickets; its buffers serve every match.
type splitter struct {
	sizes  []int
	totals []float64
	lists  [2][matchrules.MaxTeamSize + 1][]entry // meet in the middle: each half's subsets by head count
	tmp    []entry
}

type entry struct {
	sum  float64
	mask uint32
}

// smallMax is the most tickets split by trying every split; above, meet in the middle.
const smallMax = 12

// split returns the tickets (bit i: ticket i) on the anchor's team: those holding ticket 0
// whose sizes sum to t with the least |difference of team totals|, the first found on a
// tie. A split exists (the walk checked the head counts).
//
// Both ways cut tickets 1..m-1 in two halves and list each half's subsets by head count;
// a split is a subset of each half whose head counts make t with ticket 0's. Few tickets:
// every such pair is tried (at most 462, for 12 solos). More: meet in the middle, each
// list sorted by sum (built by merging) and, for every head count of the first half, the
// two lists walked against each other toward the sum that evens the teams, about 2^(m/2)
// steps instead of 2^(m-1).
func (sp *splitter) split(t int) uint32 {
	m := len(sp.sizes)
	total := 0.0
	for _, x := range sp.totals {
		total += x
	}
	need := t - sp.sizes[0]
	h := 1 + (m-1)/2
	sorted := m > smallMax
	sp.subsets(0, 1, h, need, sorted)
	sp.subsets(1, h, m, need, sorted)
	best, bestMask := math.Inf(1), uint32(0)
	for na := 0; na <= need; na++ {
		A, B := sp.lists[0][na], sp.lists[1][need-na]
		if !sorted {
			for _, a := range A {
				for _, b := range B {
					if d := math.Abs(2*(sp.totals[0]+a.sum+b.sum) - total); d < best {
						best, bestMask = d, 1|a.mask|b.mask
					}
				}
			}
			continue
		}
		i, j := 0, len(B)-1
		for i < len(A) && j >= 0 {
			d := 2*(sp.totals[0]+A[i].sum+B[j].sum) - total
			if math.Abs(d) < best {
				best, bestMask = math.Abs(d), 1|A[i].mask|B[j].mask
			}
			if d < 0 {
				i++
			} else {
				j--
			}
		}
	}
	return bestMask
}

// subsets lists the subsets of tickets lo..hi-1 into lists[half] by head count (up to
// need); with sorted each list is sorted by sum: adding ticket i merges list c-size,
// shifted by its total, into list c.
func (sp *splitter) subsets(half, lo, hi, need int, sorted bool) {
	L := &sp.lists[half]
	for c := range L {
		L[c] = L[c][:0]
	}
	L[0] = append(L[0], entry{})
	for i := lo; i < hi; i++ {
		s, x, bit := sp.sizes[i], sp.totals[i], uint32(1)<<i
		for c := need; c >= s; c-- { // list c-s is still without ticket i
			if !sorted {
				for _, e := range L[c-s] {
					L[c] = append(L[c], entry{e.sum + x, e.mask | bit})
				}
				continue
			}
			a, b := L[c], L[c-s]
			out := sp.tmp[:0]
			ia, ib := 0, 0
			for ia < len(a) || ib < len(b) {
				if ib == len(b) || ia < len(a) && a[ia].sum <= b[ib].sum+x {
					out = append(out, a[ia])
					ia++
				} else {
					out = append(out, entry{b[ib].sum + x, b[ib].mask | bit})
					ib++
				}
			}
			sp.tmp = L[c][:0]
			L[c] = out
		}
	}
}
