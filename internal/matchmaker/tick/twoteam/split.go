package twoteam

import (
	"math"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

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
