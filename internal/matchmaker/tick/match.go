package tick

import (
	"math"
	"math/bits"
)

// makeMatch records the match of the tickets at positions c (the anchor first): the most
// even split, the pairs, the region; and takes the tickets out of the pass.
func (p *pass) makeMatch(c []int32) {
	sp := &p.sp
	sp.sizes, sp.totals = sp.sizes[:0], sp.totals[:0]
	for _, pos := range c {
		sp.sizes = append(sp.sizes, int(p.nodes[pos].size))
		s := 0.0
		for _, r := range p.ratings(pos) {
			s += r
		}
		sp.totals = append(sp.totals, s)
	}
	team0 := sp.split(p.t)

	base := len(p.ids)
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
			ti := int(p.nodes[pos].in)
			for j, r := range p.ratings(pos) {
				x := member{Slot{Ticket: ti, Player: j}, r, p.nodes[pos].iv}
				ms = append(ms, x)
				for q := len(ms) - 1; q > 0 && x.less(ms[q-1]); q-- { // at most 16 players
					ms[q], ms[q-1] = ms[q-1], x
				}
			}
		}
		team[side], p.members[side] = ms, ms
	}
	t := p.t
	sb := len(p.slots)
	for side := range 2 {
		for _, x := range team[side] {
			p.slots = append(p.slots, x.slot)
		}
	}
	t0 := p.slots[sb : sb+t : sb+t]
	t1 := p.slots[sb+t : sb+2*t : sb+2*t]
	pb := len(p.pairs)
	var tot0, tot1 float64
	for i := range t {
		x, y := team[0][i], team[1][i]
		tot0 += x.r
		tot1 += y.r
		p.pairs = append(p.pairs, Pair{Players: [2]Slot{x.slot, y.slot}, Difference: math.Abs(x.r - y.r),
			Interval: min(x.iv, y.iv)})
	}
	sd := math.Abs(tot0 - tot1)
	region := ""
	if r, _ := p.region(c, math.MaxUint64); r >= 0 {
		region = p.regionNames[r]
	}
	p.matches = append(p.matches, Match{
		Tickets:           p.ids[base:len(p.ids):len(p.ids)],
		Teams:             [2][]Slot{t0, t1},
		Pairs:             p.pairs[pb : pb+t : pb+t],
		Region:            region,
		SkillDifference:   sd,
		AverageDifference: sd / float64(t),
	})
	for _, pos := range c {
		p.take(pos)
	}
}

// ratings are the ratings of the players of the ticket at pos.
func (p *pass) ratings(pos int32) []float64 {
	o := p.nodes[pos].rat
	return p.rat[o : o+int32(p.nodes[pos].size)]
}

// member is a player of a match being made, with its rating and its ticket's interval.
type member struct {
	slot Slot
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
	pv, nx := p.nodes[pos].prev, p.nodes[pos].next
	if pv >= 0 {
		p.nodes[pv].next = nx
	}
	if nx >= 0 {
		p.nodes[nx].prev = pv
	}
	s := int(p.nodes[pos].size)
	p.count[s]--
	if p.count[s] <= 2*p.t/s {
		p.feasible = [MaxTeamSize + 1]int8{}
	}
	if p.greedy {
		p.tree.set(int(pos), none)
	}
}

// splitter finds the most even split of a match's tickets; its buffers serve every match.
type splitter struct {
	sizes  []int
	totals []float64
	lists  [2][MaxTeamSize + 1][]entry // meet in the middle: each half's subsets by head count
	tmp    []entry
}

type entry struct {
	sum  float64
	mask uint32
}

// grayMax is the most tickets split by enumerating every split; above, meet in the middle.
const grayMax = 12

// split returns the tickets (bit i: ticket i) on the anchor's team: those holding ticket 0
// whose sizes sum to t with the least |difference of team totals|, the first found on a
// tie. A split exists (the walk checked the head counts).
func (sp *splitter) split(t int) uint32 {
	if len(sp.sizes) > grayMax {
		return sp.meet(t)
	}
	total := 0.0
	for _, x := range sp.totals {
		total += x
	}
	sum, n, mask := sp.totals[0], sp.sizes[0], uint32(1)
	best, bestMask := math.Inf(1), uint32(0)
	if n == t {
		best, bestMask = math.Abs(2*sum-total), mask
	}
	// Every subset of tickets 1..m-1 in Gray-code order: one ticket moves per step.
	for g := uint32(1); g < 1<<(len(sp.sizes)-1); g++ {
		i := bits.TrailingZeros32(g) + 1
		mask ^= 1 << i
		if mask>>i&1 != 0 {
			sum += sp.totals[i]
			n += sp.sizes[i]
		} else {
			sum -= sp.totals[i]
			n -= sp.sizes[i]
		}
		if n == t {
			if d := math.Abs(2*sum - total); d < best {
				best, bestMask = d, mask
			}
		}
	}
	return bestMask
}

// meet splits many tickets exactly by meeting in the middle: tickets 1..m-1 are cut in two
// halves, each half's subset sums listed by head count and sorted (built by merging), and
// for every head count of the first half the two lists are walked against each other
// toward the sum that evens the teams.
func (sp *splitter) meet(t int) uint32 {
	m := len(sp.sizes)
	total := 0.0
	for _, x := range sp.totals {
		total += x
	}
	need := t - sp.sizes[0]
	h := 1 + (m-1)/2
	sp.subsets(0, 1, h, need)
	sp.subsets(1, h, m, need)
	best, bestMask := math.Inf(1), uint32(0)
	for na := 0; na <= need; na++ {
		A, B := sp.lists[0][na], sp.lists[1][need-na]
		i, j := 0, len(B)-1
		for i < len(A) && j >= 0 {
			s := A[i].sum + B[j].sum
			d := 2*(sp.totals[0]+s) - total
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
// need), each list sorted by sum: adding ticket i merges list c-size with list c.
func (sp *splitter) subsets(half, lo, hi, need int) {
	L := &sp.lists[half]
	for c := range L {
		L[c] = L[c][:0]
	}
	L[0] = append(L[0], entry{})
	for i := lo; i < hi; i++ {
		s, x, bit := sp.sizes[i], sp.totals[i], uint32(1)<<i
		for c := need; c >= s; c-- {
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
