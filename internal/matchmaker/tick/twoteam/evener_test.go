package twoteam

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The evener finds the most even match a brute force over every choice of the candidates
// finds (each on the anchor's team, on the other or out), parties whole, and of the
// matches as even the one of the least set of candidates, for anchors and candidates of
// every team size up to 6.
func TestEvenerFindsTheMostEvenChoice(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 6))
	found := 0
	for run := range 2000 {
		ts := 1 + rng.IntN(6)
		n := rng.IntN(11)
		var e evener
		for range n {
			size := 1
			if rng.IntN(3) == 0 {
				size = 1 + rng.IntN(ts)
			}
			e.sizes = append(e.sizes, size)
			// Ratings on a grid of 5 in half the runs: matches exactly as even as others.
			r := 1000 + 80*rng.Float64()
			if run%2 == 0 {
				r = float64(1000 + 5*rng.IntN(16))
			}
			e.totals = append(e.totals, float64(size)*r)
		}
		sa := 1 + rng.IntN(ts)
		ta := float64(sa) * 1040
		set, diff, ok := e.evenest(ts, sa, ta, 1e-9)
		want, wantSet, wantOK := bruteEvenest(e.sizes, e.totals, ts, sa, ta)
		if ok != wantOK || ok && (math.Abs(diff-want) > 1e-6 || set != wantSet) {
			t.Fatalf("run %d: team size %d, anchor %d, candidates %v %v: evenest %g of %b (%v), the brute force %g of %b (%v)",
				run, ts, sa, e.sizes, e.totals, diff, set, ok, want, wantSet, wantOK)
		}
		if ok {
			found++
		}
	}
	if found < 800 {
		t.Fatalf("only %d of 2000 runs had a match: the test hardly tests", found)
	}
}

// bruteEvenest tries every choice of the candidates: the least |difference| of the teams,
// and the least set of candidates whose match is that even (to 1e-9).
func bruteEvenest(sizes []int, totals []float64, t, sa int, ta float64) (float64, uint32, bool) {
	bySet := make([]float64, 1<<len(sizes))
	for i := range bySet {
		bySet[i] = math.Inf(1)
	}
	var try func(i, x, y int, set uint32, d float64)
	try = func(i, x, y int, set uint32, d float64) {
		if x > t || y > t {
			return
		}
		if i == len(sizes) {
			if x == t && y == t {
				bySet[set] = min(bySet[set], math.Abs(d))
			}
			return
		}
		try(i+1, x, y, set, d)
		try(i+1, x+sizes[i], y, set|1<<i, d+totals[i])
		try(i+1, x, y+sizes[i], set|1<<i, d-totals[i])
	}
	try(0, sa, 0, 0, ta)
	best := math.Inf(1)
	for _, d := range bySet {
		best = min(best, d)
	}
	for set, d := range bySet {
		if !math.IsInf(best, 1) && d <= best+1e-9 {
			return best, uint32(set), true
		}
	}
	return 0, 0, false
}
