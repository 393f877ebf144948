package pairing

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
)

// checkResult verifies what must hold of any result, whatever the queue: every player
// exactly once, pairs within their interval and Max, team sizes, totals, and for
// rating_window adjacency in rating order and the optimality of the sides.
func checkResult(r []float64, o Options, res Result) error {
	n, t, iv := len(r), o.TeamSize, o.Interval
	seen := make([]int, n)
	if !slices.IsSorted(res.Unmatched) {
		return fmt.Errorf("unmatched not ascending: %v", res.Unmatched)
	}
	for _, q := range res.Unmatched {
		if q < 0 || q >= n {
			return fmt.Errorf("unmatched index %d out of range", q)
		}
		seen[q]++
	}
	for mi, m := range res.Matches {
		if len(m.Pairs) != t || len(m.Teams[0].Players) != t || len(m.Teams[1].Players) != t {
			return fmt.Errorf("match %d: %d pairs, teams of %d and %d, want %d", mi,
				len(m.Pairs), len(m.Teams[0].Players), len(m.Teams[1].Players), t)
		}
		var tot [2]float64
		widest, oldest := 0.0, n
		var group []int
		for i, p := range m.Pairs {
			for side, q := range p.Players {
				if q < 0 || q >= n {
					return fmt.Errorf("match %d: index %d out of range", mi, q)
				}
				if m.Teams[side].Players[i] != q {
					return fmt.Errorf("match %d: pair %d's player %d is not team %d's player %d", mi, i, q, side, i)
				}
				seen[q]++
				tot[side] += r[q]
				oldest = min(oldest, q)
				group = append(group, q)
			}
			if d := math.Abs(r[p.Players[0]] - r[p.Players[1]]); p.Difference != d {
				return fmt.Errorf("match %d pair %d: difference %g, ratings differ by %g", mi, i, p.Difference, d)
			}
			if !(p.Difference <= p.Interval) || p.Interval > iv.Max || p.Interval < iv.Initial {
				return fmt.Errorf("match %d pair %d: difference %g, interval %g, options %+v", mi, i, p.Difference, p.Interval, iv)
			}
			widest = max(widest, p.Interval)
			if o.Strategy == GreedyPairs && p.Players[0] > p.Players[1] {
				return fmt.Errorf("match %d pair %d: anchor %d is younger than its opponent", mi, i, p.Players[0])
			}
			if o.Strategy == GreedyPairs && i > 0 && p.Players[0] < m.Pairs[i-1].Players[0] {
				return fmt.Errorf("match %d pair %d: anchors out of queue order", mi, i)
			}
		}
		if m.Interval < widest || m.Interval > iv.Max {
			return fmt.Errorf("match %d: interval %g, widest pair %g, max %g", mi, m.Interval, widest, iv.Max)
		}
		if tot[0] != m.Teams[0].RatingTotal || tot[1] != m.Teams[1].RatingTotal {
			return fmt.Errorf("match %d: totals %v, want %v", mi, []float64{m.Teams[0].RatingTotal, m.Teams[1].RatingTotal}, tot)
		}
		if sd := math.Abs(tot[0] - tot[1]); m.SkillDifference != sd || m.AverageDifference != sd/float64(t) {
			return fmt.Errorf("match %d: skill difference %g, average %g; totals differ by %g", mi, m.SkillDifference, m.AverageDifference, sd)
		}
		if o.Strategy != RatingWindow {
			continue
		}
		// The anchor is the oldest of the match; it plays on team 0.
		if !slices.Contains(m.Teams[0].Players, oldest) {
			return fmt.Errorf("match %d: anchor %d not on team 0", mi, oldest)
		}
		// Pairs are adjacent in (rating, queue index) order.
		slices.SortFunc(group, func(x, y int) int {
			if c := cmp.Compare(r[x], r[y]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
		for i, p := range m.Pairs {
			lo, hi := min(p.Players[0], p.Players[1]), max(p.Players[0], p.Players[1])
			g0, g1 := min(group[2*i], group[2*i+1]), max(group[2*i], group[2*i+1])
			if lo != g0 || hi != g1 {
				return fmt.Errorf("match %d pair %d: %v, want adjacent players %d, %d", mi, i, p.Players, group[2*i], group[2*i+1])
			}
		}
		// No pair differs by more than the farthest player from the anchor.
		reach := 0.0
		for _, q := range group {
			reach = max(reach, math.Abs(r[q]-r[oldest]))
		}
		for i, p := range m.Pairs {
			if p.Difference > reach {
				return fmt.Errorf("match %d pair %d: difference %g beyond the window's reach %g", mi, i, p.Difference, reach)
			}
		}
		// The sides are optimal, up to rounding.
		best := bestSides(r, m, oldest)
		if m.SkillDifference > best+tolerance(r, m) {
			return fmt.Errorf("match %d: skill difference %g, brute force finds %g", mi, m.SkillDifference, best)
		}
	}
	for q, c := range seen {
		if c != 1 {
			return fmt.Errorf("player %d appears %d times", q, c)
		}
	}
	return nil
}

// tolerance bounds the rounding in comparing two ways of summing a match's ratings.
func tolerance(r []float64, m Match) float64 {
	s := 0.0
	for _, p := range m.Pairs {
		s += math.Abs(r[p.Players[0]]) + math.Abs(r[p.Players[1]])
	}
	return 1e-12 * s
}

// exactSums reports whether every sum of up to 32 of the ratings is exact in float64,
// so that the sides chosen by the fast version and the brute force must agree exactly.
func exactSums(r []float64) bool {
	for _, x := range r {
		if x != math.Trunc(x) || math.Abs(x) > 1<<47 {
			return false
		}
	}
	return true
}

// sameResult compares the fast result with the reference. With sides=false the side
// assignment of rating_window pairs may differ when it is equally balanced up to rounding.
func sameResult(r []float64, got, want Result, sides bool) error {
	if !slices.Equal(got.Unmatched, want.Unmatched) {
		return fmt.Errorf("unmatched %v, want %v", got.Unmatched, want.Unmatched)
	}
	if len(got.Matches) != len(want.Matches) {
		return fmt.Errorf("%d matches, want %d", len(got.Matches), len(want.Matches))
	}
	for mi := range got.Matches {
		g, w := got.Matches[mi], want.Matches[mi]
		if g.Interval != w.Interval {
			return fmt.Errorf("match %d: interval %g, want %g", mi, g.Interval, w.Interval)
		}
		if len(g.Pairs) != len(w.Pairs) {
			return fmt.Errorf("match %d: %d pairs, want %d", mi, len(g.Pairs), len(w.Pairs))
		}
		same := true
		for i := range g.Pairs {
			gp, wp := g.Pairs[i], w.Pairs[i]
			if gp.Difference != wp.Difference || gp.Interval != wp.Interval {
				return fmt.Errorf("match %d pair %d: %+v, want %+v", mi, i, gp, wp)
			}
			if gp.Players != wp.Players {
				same = false
				if sides || gp.Players != [2]int{wp.Players[1], wp.Players[0]} {
					return fmt.Errorf("match %d pair %d: players %v, want %v", mi, i, gp.Players, wp.Players)
				}
			}
		}
		if same {
			if g.SkillDifference != w.SkillDifference || g.AverageDifference != w.AverageDifference ||
				g.Teams[0].RatingTotal != w.Teams[0].RatingTotal || g.Teams[1].RatingTotal != w.Teams[1].RatingTotal ||
				!slices.Equal(g.Teams[0].Players, w.Teams[0].Players) || !slices.Equal(g.Teams[1].Players, w.Teams[1].Players) {
				return fmt.Errorf("match %d: %+v, want %+v", mi, g, w)
			}
		} else if math.Abs(g.SkillDifference-w.SkillDifference) > tolerance(r, g) {
			return fmt.Errorf("match %d: other sides with skill difference %g, want %g", mi, g.SkillDifference, w.SkillDifference)
		}
	}
	return nil
}

// randomCase draws a queue and options. The kinds of ratings cover ties (small
// integer ranges, pools of repeated reals, all equal), the thesis's ratings, huge and
// negative ratings, and mixed magnitudes where rounded distances tie but exact ones do not.
func randomCase(rng *rand.Rand) ([]float64, Options, string) {
	o := Options{Strategy: RatingWindow}
	if rng.IntN(2) == 0 {
		o.Strategy = GreedyPairs
	}
	switch rng.IntN(10) {
	case 0:
		o.TeamSize = 1
	case 1:
		o.TeamSize = 7 + rng.IntN(MaxTeamSize-6)
	default:
		o.TeamSize = 2 + rng.IntN(5)
	}
	n := rng.IntN(250)
	if rng.IntN(4) == 0 {
		n = rng.IntN(4*o.TeamSize + 2)
	}
	r := make([]float64, n)
	kind := rng.IntN(7)
	switch kind {
	case 0: // small integer ranges: many ties
		k := []int{1, 2, 3, 10, 100, 2000}[rng.IntN(6)]
		for i := range r {
			r[i] = float64(rng.IntN(k))
		}
	case 1: // uniform reals
		for i := range r {
			r[i] = 2000 * rng.Float64()
		}
	case 2: // the thesis's ratings
		c := skill.DefaultCoefficients()
		if rng.IntN(2) == 0 {
			c = skill.Coefficients{Accuracy: 0.7072, ReactionTime: 0.544, Awareness: 0.272, Movement: 0.2}
		}
		for i := range r {
			r[i] = skill.Rating(skill.Stats{Accuracy: rng.Float64(), ReactionTime: rng.Float64(), Awareness: rng.Float64(), Movement: rng.Float64()}, c)
		}
	case 3: // a pool of repeated reals
		pool := make([]float64, 1+rng.IntN(12))
		for i := range pool {
			pool[i] = 2000 * rng.Float64()
		}
		for i := range r {
			r[i] = pool[rng.IntN(len(pool))]
		}
	case 4: // huge and negative integers
		for i := range r {
			r[i] = float64(rng.IntN(2_000_000)) - 1e6
			if rng.IntN(2) == 0 {
				r[i] += 1e12
			} else {
				r[i] -= 1e12
			}
		}
	case 5: // mixed magnitudes
		vals := []float64{0, math.Copysign(0, -1), 1e15, -1e15, 1e15 + 0.125, 1e-300, -1e-300, 5e-324, 1, -1, 0.1, 0.2, 0.3}
		for i := range r {
			switch rng.IntN(3) {
			case 0:
				r[i] = vals[rng.IntN(len(vals))]
			case 1:
				r[i] = rng.Float64() * 1e-3
			default:
				r[i] = 1e15 * (rng.Float64() - 0.5)
			}
		}
	case 6: // small negative reals, quarter steps
		for i := range r {
			r[i] = float64(rng.IntN(400)-200) / 4
		}
	}
	lo, hi := 0.0, 0.0
	if n > 0 {
		lo, hi = slices.Min(r), slices.Max(r)
	}
	span := hi - lo
	iv := Interval{Max: math.Inf(1)}
	switch rng.IntN(4) {
	case 0:
		iv.Initial = 0
	case 1:
		iv.Initial = 25
	case 2:
		iv.Initial = span * rng.Float64() / 20
	default:
		iv.Initial = float64(rng.IntN(8)) / 2
	}
	switch rng.IntN(5) {
	case 0:
		iv.Step = 25
	case 1:
		iv.Step = 0.5
	case 2:
		iv.Step = span / float64(1+rng.IntN(1000))
	case 3:
		iv.Step = rng.Float64() * 10
	default:
		iv.Step = span * rng.Float64()
	}
	// Keep the literal widening of the reference short.
	iv.Step = max(iv.Step, span/2e4, 1e-3)
	switch rng.IntN(6) {
	case 0, 1, 2:
	case 3:
		iv.Max = iv.Initial
	case 4:
		iv.Max = iv.Initial + float64(rng.IntN(6))*iv.Step // on the sequence
	default:
		iv.Max = iv.Initial + rng.Float64()*span/4
	}
	o.Interval = iv
	return r, o, fmt.Sprintf("kind %d, n %d, %+v", kind, n, o)
}

func TestMatchesTheReference(t *testing.T) {
	t.Parallel()
	cases := 3000
	if testing.Short() {
		cases = 400
	}
	windowSidesDiffer := 0
	for seed := range uint64(cases) {
		rng := rand.New(rand.NewPCG(seed, 0x7a1e))
		r, o, desc := randomCase(rng)
		got, err := Make(r, o)
		if err != nil {
			t.Fatalf("seed %d (%s): %v", seed, desc, err)
		}
		if err := checkResult(r, o, got); err != nil {
			t.Fatalf("seed %d (%s): %v", seed, desc, err)
		}
		want := ref(r, o)
		if err := sameResult(r, got, want, true); err != nil {
			if !exactSums(r) && sameResult(r, got, want, false) == nil {
				windowSidesDiffer++
				if testing.Verbose() && windowSidesDiffer < 6 {
					t.Logf("seed %d (%s): %v", seed, desc, err)
				}
				continue
			}
			t.Fatalf("seed %d (%s):\nratings %v\n%v", seed, desc, r, err)
		}
	}
	t.Logf("%d cases; %d rating_window cases chose other sides as well balanced up to rounding", cases, windowSidesDiffer)
}

// The radix sort used for long queues orders like a comparison sort on (rating, index), with
// its own work arrays or with those of earlier sorts (SortBuffers).
func TestSortQueue(t *testing.T) {
	t.Parallel()
	var buffers SortBuffers
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 5))
		n := radixMin + rng.IntN(5000)
		if seed%4 == 0 {
			n = rng.IntN(radixMin)
		}
		r := make([]float64, n)
		for i := range r {
			switch rng.IntN(6) {
			case 0:
				r[i] = math.Copysign(0, -1)
			case 1:
				r[i] = 0
			case 2:
				r[i] = float64(rng.IntN(20) - 10)
			case 3:
				r[i] = math.Ldexp(rng.Float64()-0.5, rng.IntN(2000)-1000)
			case 4:
				r[i] = []float64{5e-324, -5e-324, 1e300, -1e300, math.SmallestNonzeroFloat64}[rng.IntN(5)]
			default:
				r[i] = 2000 * rng.Float64()
			}
		}
		got := make([]int32, n)
		sortQueue(r, got)
		kept := make([]int32, n) // with work arrays an earlier sort of another size left
		buffers.SortIndex(r, kept)
		want := make([]int32, n)
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(a, b int32) int { return cmp.Compare(r[a], r[b]) })
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d, n %d: the sort differs", seed, n)
		}
		if !slices.Equal(kept, want) {
			t.Fatalf("seed %d, n %d: the sort with kept buffers differs", seed, n)
		}
	}
}

// Long queues take the radix sort; fewer cases, as the reference is quadratic.
func TestLongQueuesMatchTheReference(t *testing.T) {
	t.Parallel()
	cases := 24
	if testing.Short() {
		cases = 4
	}
	for seed := range uint64(cases) {
		rng := rand.New(rand.NewPCG(seed, 0x10c))
		r, o, desc := randomCase(rng)
		n := radixMin + rng.IntN(1500)
		if len(r) == 0 {
			r = append(r, 1000)
		}
		for len(r) < n { // more of the same kind of ratings, duplicated and shifted
			r = append(r, r[rng.IntN(len(r))]+float64(rng.IntN(3)))
		}
		rng.Shuffle(len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
		got, err := Make(r, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkResult(r, o, got); err != nil {
			t.Fatalf("seed %d (%s): %v", seed, desc, err)
		}
		want := ref(r, o)
		if err := sameResult(r, got, want, exactSums(r)); err != nil {
			t.Fatalf("seed %d (%s, n %d): %v", seed, desc, len(r), err)
		}
	}
}
