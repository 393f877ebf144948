package twoteam

import (
	"math"
)

// evener finds the most even match of an anchor with some of a few candidates: which of
// them play on the anchor's team and which on the other, each team of t players, parties
// whole, with the least |difference of the team totals|. It is the split's search with a
// third choice for each candidate, to stay out: the candidates are cut in two halves, each
// half's choices listed by the players they put on each team and sorted by the difference
// they make, and every list of the first half is walked against the one of the second
// that completes the teams, toward the difference that evens them: about 3^(n/2) steps for
// n candidates where trying every choice takes 3^n. Its buffers serve every anchor.
type evener struct {
	sizes  []int
	totals []float64
	// per half, the choices by head counts on each team: lists[half][x*(t+1)+y]
	lists [2][][]evenChoice
	spare []evenChoice // a list's array, for the merge that replaces it
}

// evenChoice is a choice of one half's candidates: bit i of onA (onB) is candidate i on the
// anchor's team (the other), and diff the total of the first less the total of the second.
type evenChoice struct {
	diff     float64
	onA, onB uint32
}

// lookAheadTickets bounds the candidates the evener chooses among: 3^(n/2) grows fast.
const lookAheadTickets = 10

// evenest returns the most even match of the anchor (sa players, rating total ta) with
// some of the candidates of sizes and totals, and the teams' difference; ok false when no
// choice completes two teams of t. Of the matches within tol of the most even, the one of
// the least set of candidates (bit i: candidate i) is returned: the one whose last
// candidate is the first, and so on.
func (e *evener) evenest(t, sa int, ta, tol float64) (set uint32, diff float64, ok bool) {
	n := len(e.sizes)
	h := n / 2
	e.enumerate(0, 0, h, t, t-sa, t)
	e.enumerate(1, h, n, t, t-sa, t)
	best := math.Inf(1)
	e.within(t, sa, ta, 0, func(x float64, _ uint32) { best = min(best, x) })
	if math.IsInf(best, 1) {
		return 0, 0, false
	}
	set = math.MaxUint32
	e.within(t, sa, ta, best+tol, func(x float64, s uint32) {
		if x <= best+tol {
			set = min(set, s)
		}
	})
	return set, best, true
}

// within calls f with the |difference| of the teams and the candidates of each match of a
// choice of the first half and one of the second that completes the teams with it, among
// those whose difference is at most limit, and always the nearest to evening the teams on
// either side.
func (e *evener) within(t, sa int, ta, limit float64, f func(diff float64, set uint32)) {
	stride := t + 1
	for x := 0; x <= t-sa; x++ {
		for y := 0; y <= t; y++ {
			first, second := e.lists[0][x*stride+y], e.lists[1][(t-sa-x)*stride+(t-y)]
			if len(first) == 0 || len(second) == 0 {
				continue
			}
			for _, c := range first {
				// The second half's difference that evens the teams is -(ta + c.diff).
				want := -(ta + c.diff)
				j := firstAtLeast(second, want-limit)
				for k := max(j-1, 0); k < len(second); k++ {
					d := second[k]
					if k > j && d.diff > want+limit {
						break
					}
					f(math.Abs(ta+c.diff+d.diff), c.onA|c.onB|d.onA|d.onB)
				}
			}
		}
	}
}

// enumerate lists into lists[half] every choice of candidates lo..hi-1 that puts at most
// maxA players on the anchor's team and maxB on the other, by head counts, each list sorted
// by diff: a candidate at a time, each list becomes the merge of itself (the candidate
// out), the list with the candidate's players fewer on the anchor's team (it on that team)
// and the list with them fewer on the other (it there), each sorted already.
func (e *evener) enumerate(half, lo, hi, t, maxA, maxB int) {
	stride := t + 1
	if len(e.lists[half]) < stride*stride {
		e.lists[half] = make([][]evenChoice, stride*stride)
	}
	lists := e.lists[half][:stride*stride]
	for i := range lists {
		lists[i] = lists[i][:0]
	}
	lists[0] = append(lists[0], evenChoice{})
	for i := lo; i < hi; i++ {
		s, v, bit := e.sizes[i], e.totals[i], uint32(1)<<i
		for x := maxA; x >= 0; x-- { // the lists with fewer players are still without i
			for y := maxB; y >= 0; y-- {
				var onA, onB []evenChoice
				if x >= s {
					onA = lists[(x-s)*stride+y]
				}
				if y >= s {
					onB = lists[x*stride+y-s]
				}
				if len(onA)+len(onB) == 0 {
					continue
				}
				at := x*stride + y
				e.spare, lists[at] = lists[at], merge3(e.spare[:0], lists[at], onA, onB, v, bit)
			}
		}
	}
}

// merge3 appends to out the choices of out0 (sorted by diff) merged with those of onA with
// the candidate of total v and bit on the anchor's team, and of onB with it on the other.
func merge3(out, out0, onA, onB []evenChoice, v float64, bit uint32) []evenChoice {
	i, j, k := 0, 0, 0
	for i < len(out0) || j < len(onA) || k < len(onB) {
		// The least of the three heads; +Inf for a list that is done.
		a, b, c := math.Inf(1), math.Inf(1), math.Inf(1)
		if i < len(out0) {
			a = out0[i].diff
		}
		if j < len(onA) {
			b = onA[j].diff + v
		}
		if k < len(onB) {
			c = onB[k].diff - v
		}
		switch {
		case a <= b && a <= c && i < len(out0):
			out = append(out, out0[i])
			i++
		case b <= c && j < len(onA):
			out = append(out, evenChoice{b, onA[j].onA | bit, onA[j].onB})
			j++
		default:
			out = append(out, evenChoice{c, onB[k].onA, onB[k].onB | bit})
			k++
		}
	}
	return out
}

// evenEnough is the team-average difference, as a fraction of the anchor's interval, under
// which the walk's pick is made without looking further: the look-ahead costs a search, and
// most picks of a dense queue are that even already.
const evenEnough = 0.02

// firstAtLeast is the index of the first choice of l (sorted by diff) whose diff is at least
// x, len(l) for none.
func firstAtLeast(l []evenChoice, x float64) int {
	lo, hi := 0, len(l)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); l[m].diff < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
