package pairing

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
)

// The reference: an obviously-correct O(N^2) version of both strategies. For every anchor
// it scans the whole queue, widens the interval literally one step at a time, and for
// rating_window tries every side assignment by brute force. It shares no code with the
// fast version but Pair, Match and Result.

// refLiteralSteps bounds the literal widening loop; beyond it (huge distances or
// tiny steps) the reference bisects over k, which is as plainly correct since the values
// of the sequence never decrease.
const refLiteralSteps = 1_000_000

// refAt is the k-th value of the widening sequence, as documented on Interval.
func refAt(iv Interval, k uint64) float64 {
	return iv.Initial + float64(float64(k)*iv.Step)
}

// refStep widens literally, k = 0, 1, 2, ..., until the interval covers d.
func refStep(iv Interval, d float64) float64 {
	for k := range uint64(refLiteralSteps) {
		if v := refAt(iv, k); d <= v {
			return v
		}
	}
	lo, hi := uint64(refLiteralSteps-1), uint64(math.MaxUint64)
	if refAt(iv, hi) < d {
		panic(fmt.Sprintf("reference: no k < 2^64 covers %g with %+v", d, iv))
	}
	for hi-lo > 1 { // refAt(lo) < d <= refAt(hi)
		m := lo + (hi-lo)/2
		if refAt(iv, m) >= d {
			hi = m
		} else {
			lo = m
		}
	}
	return refAt(iv, hi)
}

// refDist is the rounded distance, as reported in Pair.Difference.
func refDist(a, b float64) float64 { return math.Abs(a - b) }

// refCmpDist compares |a-x| with |a-y| exactly. Rounding is monotone, so unequal
// rounded distances decide; equal ones on the same side of a are ordered by the ratings,
// on opposite sides in exact rational arithmetic.
func refCmpDist(a, x, y float64) int {
	dx, dy := refDist(a, x), refDist(a, y)
	switch {
	case dx != dy:
		return cmp.Compare(dx, dy)
	case x >= a && y >= a:
		return cmp.Compare(x, y)
	case x <= a && y <= a:
		return cmp.Compare(y, x)
	}
	ra := new(big.Rat).SetFloat64(a)
	ex := new(big.Rat).Sub(ra, new(big.Rat).SetFloat64(x))
	ey := new(big.Rat).Sub(ra, new(big.Rat).SetFloat64(y))
	return ex.Abs(ex).Cmp(ey.Abs(ey))
}

// refBuild makes a Match from pairs whose Players[0] plays on team 0.
func refBuild(r []float64, pairs []Pair, window float64) Match {
	m := Match{Pairs: slices.Clone(pairs), Interval: window}
	for _, p := range pairs {
		for side := range 2 {
			m.Teams[side].Players = append(m.Teams[side].Players, p.Players[side])
			m.Teams[side].RatingTotal += r[p.Players[side]]
		}
		m.Interval = max(m.Interval, p.Interval)
	}
	m.SkillDifference = math.Abs(m.Teams[0].RatingTotal - m.Teams[1].RatingTotal)
	m.AverageDifference = m.SkillDifference / float64(len(pairs))
	return m
}

func refResult(n int, matches []Match) Result {
	used := make([]bool, n)
	for _, m := range matches {
		for _, tm := range m.Teams {
			for _, q := range tm.Players {
				used[q] = true
			}
		}
	}
	res := Result{Matches: matches, Unmatched: []int{}}
	for i, u := range used {
		if !u {
			res.Unmatched = append(res.Unmatched, i)
		}
	}
	return res
}

// refGreedy is the thesis's loop, scanning the queue for every anchor.
func refGreedy(r []float64, o Options) Result {
	n, t, iv := len(r), o.TeamSize, o.Interval
	in := make([]bool, n)
	for i := range in {
		in[i] = true
	}
	count := n
	var matches []Match
	var cur []Pair
	for count >= 2*(t-len(cur)) {
		a := slices.Index(in, true)
		in[a] = false
		count--
		// Widen step by step until someone is within the interval: until it covers the
		// smallest distance.
		nearest := math.Inf(1)
		for q := range n {
			if in[q] {
				nearest = min(nearest, refDist(r[a], r[q]))
			}
		}
		interval := refStep(iv, nearest)
		if interval > iv.Max {
			continue // the anchor leaves unmatched
		}
		// The nearest player within the interval, exactly; the older one on a tie.
		best := -1
		for q := range n {
			if in[q] && refDist(r[a], r[q]) <= interval &&
				(best < 0 || refCmpDist(r[a], r[q], r[best]) < 0) {
				best = q
			}
		}
		in[best] = false
		count--
		cur = append(cur, Pair{Players: [2]int{a, best}, Difference: refDist(r[a], r[best]), Interval: interval})
		if len(cur) == t {
			matches = append(matches, refBuild(r, cur, 0))
			cur = nil
		}
	}
	return refResult(n, matches)
}

// refWindow is rating_window, scanning the queue for every anchor.
func refWindow(r []float64, o Options) Result {
	n, t, iv := len(r), o.TeamSize, o.Interval
	in := make([]bool, n)
	for i := range in {
		in[i] = true
	}
	count := n
	var matches []Match
	for count >= 2*t {
		a := slices.Index(in, true)
		var others []int
		for q := range n {
			if in[q] && q != a {
				others = append(others, q)
			}
		}
		// Widen step by step until 2t-1 players are inside: until the interval covers the
		// (2t-1)-th smallest distance.
		dists := make([]float64, len(others))
		for i, q := range others {
			dists[i] = refDist(r[a], r[q])
		}
		slices.Sort(dists)
		window := refStep(iv, dists[2*t-2])
		// The 2t-1 nearest, exactly, the older first on a tie (others is in queue order
		// and the sort is stable).
		slices.SortStableFunc(others, func(x, y int) int { return refCmpDist(r[a], r[x], r[y]) })
		group := append([]int{a}, others[:2*t-1]...)
		slices.SortFunc(group, func(x, y int) int {
			if c := cmp.Compare(r[x], r[y]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
		pairs := make([]Pair, t)
		tooWide := window > iv.Max
		for i := range pairs {
			lo, hi := group[2*i], group[2*i+1]
			d := refDist(r[lo], r[hi])
			pairs[i] = Pair{Players: [2]int{lo, hi}, Difference: d, Interval: refStep(iv, d)}
			tooWide = tooWide || pairs[i].Interval > iv.Max
		}
		if tooWide {
			in[a] = false
			count--
			continue
		}
		// Every side assignment: bit i set puts the higher player of pair i on team 0.
		// Keep the anchor on team 0; the least |difference|, then the smallest mask.
		bestMask, best := -1, math.Inf(1)
		for mask := range 1 << t {
			var t0, t1 float64
			anchorOn0 := false
			for i, p := range pairs {
				on0, on1 := p.Players[0], p.Players[1]
				if mask&(1<<i) != 0 {
					on0, on1 = on1, on0
				}
				t0 += r[on0]
				t1 += r[on1]
				anchorOn0 = anchorOn0 || on0 == a
			}
			if d := math.Abs(t0 - t1); anchorOn0 && d < best {
				bestMask, best = mask, d
			}
		}
		for i := range pairs {
			if bestMask&(1<<i) != 0 {
				pairs[i].Players[0], pairs[i].Players[1] = pairs[i].Players[1], pairs[i].Players[0]
			}
		}
		for _, q := range group {
			in[q] = false
		}
		count -= 2 * t
		matches = append(matches, refBuild(r, pairs, window))
	}
	return refResult(n, matches)
}

func ref(r []float64, o Options) Result {
	if o.Strategy == GreedyPairs {
		return refGreedy(r, o)
	}
	return refWindow(r, o)
}

// bestSides is the brute-force optimum of |team0 - team1| over the side assignments
// of m's pairs that keep anchor on team 0.
func bestSides(r []float64, m Match, anchor int) float64 {
	best := math.Inf(1)
	t := len(m.Pairs)
	for mask := range 1 << t {
		var t0, t1 float64
		ok := false
		for i, p := range m.Pairs {
			on0, on1 := p.Players[0], p.Players[1]
			if mask&(1<<i) != 0 {
				on0, on1 = on1, on0
			}
			t0 += r[on0]
			t1 += r[on1]
			ok = ok || on0 == anchor
		}
		if ok {
			best = min(best, math.Abs(t0-t1))
		}
	}
	return best
}
