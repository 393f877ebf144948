package twoteam

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// The split is exact both ways (every split up to smallMax tickets, meet in the middle
// above): against a brute force over every subset, on tickets of 1..t players making two
// full teams, up to 16 solos a side and 20 tickets.
func TestSplitIsTheMostEven(t *testing.T) {
	t.Parallel()
	cases := 3000
	if testing.Short() {
		cases = 300
	}
	for seed := range uint64(cases) {
		rng := rand.New(rand.NewPCG(seed, 0x5b117))
		ts := 1 + rng.IntN(matchrules.MaxTeamSize)
		var sp splitter
		left := 2 * ts
		for left > 0 && len(sp.sizes) < 20 {
			s := 1
			if rng.IntN(3) == 0 {
				s = 1 + rng.IntN(min(ts, left))
			}
			s = min(s, left)
			sp.sizes = append(sp.sizes, s)
			left -= s
		}
		if left > 0 {
			continue
		}
		for _, s := range sp.sizes {
			total := 0.0
			for range s {
				total += float64(900 + rng.IntN(200)) // integers: sums are exact
				if seed%2 == 0 {
					total += rng.Float64()
				}
			}
			sp.totals = append(sp.totals, total)
		}
		want, feasible := bruteSplit(sp.sizes, sp.totals, ts)
		if !feasible {
			continue
		}
		mask := sp.split(ts)
		var n int
		var tot [2]float64
		for i, s := range sp.sizes {
			side := 1 - int(mask>>i&1)
			tot[side] += sp.totals[i]
			if side == 0 {
				n += s
			}
		}
		if mask&1 == 0 || n != ts || mask>>len(sp.sizes) != 0 {
			t.Fatalf("seed %d: sizes %v: split %b puts %d players and ticket 0 on team 0 (%v)", seed, sp.sizes, mask, n, mask&1 == 1)
		}
		if got := math.Abs(tot[0] - tot[1]); got > want+1e-9 {
			t.Fatalf("seed %d: sizes %v (%d tickets): difference %g, the best %g", seed, sp.sizes, len(sp.sizes), got, want)
		}
	}
}

// bruteSplit is the least |difference of totals| over every split with ticket 0 on a team
// of exactly t players.
func bruteSplit(sizes []int, totals []float64, t int) (float64, bool) {
	best, ok := math.Inf(1), false
	for m := uint32(1); m < 1<<len(sizes); m += 2 {
		n := 0
		var tot [2]float64
		for i, s := range sizes {
			side := 1 - int(m>>i&1)
			tot[side] += totals[i]
			if side == 0 {
				n += s
			}
		}
		if n == t {
			best, ok = min(best, math.Abs(tot[0]-tot[1])), true
		}
	}
	return best, ok
}
