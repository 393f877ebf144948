package pairing

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// faults returns the fields named by an apperr.Invalid error.
func faults(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.Invalid {
		t.Fatalf("error %v is not an apperr.Invalid", err)
	}
	var fields []string
	for _, f := range e.Fields {
		fields = append(fields, f.Field)
	}
	return fields
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	with := func(change func(*Options)) Options {
		o := DefaultOptions()
		change(&o)
		return o
	}
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"default", DefaultOptions(), nil},
		{"greedy", with(func(o *Options) { o.Strategy = GreedyPairs }), nil},
		{"team size 1", with(func(o *Options) { o.TeamSize = 1 }), nil},
		{"team size 16", with(func(o *Options) { o.TeamSize = 16 }), nil},
		{"team size 0", with(func(o *Options) { o.TeamSize = 0 }), []string{"team_size"}},
		{"team size 17", with(func(o *Options) { o.TeamSize = 17 }), []string{"team_size"}},
		{"team size negative", with(func(o *Options) { o.TeamSize = -5 }), []string{"team_size"}},
		{"initial 0", with(func(o *Options) { o.Interval.Initial = 0 }), nil},
		{"initial negative", with(func(o *Options) { o.Interval.Initial = -1 }), []string{"interval.initial"}},
		{"initial NaN", with(func(o *Options) { o.Interval.Initial = math.NaN() }), []string{"interval.initial"}},
		{"initial infinite", with(func(o *Options) { o.Interval.Initial = inf }), []string{"interval.initial"}},
		{"initial too large", with(func(o *Options) { o.Interval.Initial = 1e301 }), []string{"interval.initial"}},
		{"step tiny", with(func(o *Options) { o.Interval.Step = 5e-324 }), nil},
		{"step 0", with(func(o *Options) { o.Interval.Step = 0 }), []string{"interval.step"}},
		{"step negative", with(func(o *Options) { o.Interval.Step = -25 }), []string{"interval.step"}},
		{"step NaN", with(func(o *Options) { o.Interval.Step = math.NaN() }), []string{"interval.step"}},
		{"step infinite", with(func(o *Options) { o.Interval.Step = inf }), []string{"interval.step"}},
		{"max equal to initial", with(func(o *Options) { o.Interval.Max = 25 }), nil},
		{"max finite", with(func(o *Options) { o.Interval.Max = 100 }), nil},
		{"max below initial", with(func(o *Options) { o.Interval.Max = 24.9 }), []string{"interval.max"}},
		{"max zero below initial", with(func(o *Options) { o.Interval.Max = 0 }), []string{"interval.max"}},
		{"max NaN", with(func(o *Options) { o.Interval.Max = math.NaN() }), []string{"interval.max"}},
		{"max -Inf", with(func(o *Options) { o.Interval.Max = math.Inf(-1) }), []string{"interval.max"}},
		{"max too large", with(func(o *Options) { o.Interval.Max = 1e301 }), []string{"interval.max"}},
		{"max with a bad initial names only initial", with(func(o *Options) {
			o.Interval.Initial = math.NaN()
			o.Interval.Max = 1
		}), []string{"interval.initial"}},
		{"strategy empty", with(func(o *Options) { o.Strategy = "" }), []string{"strategy"}},
		{"strategy unknown", with(func(o *Options) { o.Strategy = "best" }), []string{"strategy"}},
		{"zero value", Options{}, []string{"team_size", "interval.step", "strategy"}},
		{"every fault at once", Options{TeamSize: 99, Interval: Interval{Initial: -1, Step: 0, Max: math.NaN()}, Strategy: "x"},
			[]string{"team_size", "interval.initial", "interval.step", "interval.max", "strategy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if got := faults(t, err); !slices.Equal(got, tt.want) {
				t.Fatalf("Validate() = %v, want faults %v", err, tt.want)
			}
			// Make reports the same faults.
			_, err = Make([]float64{1, 2}, tt.opts)
			if got := faults(t, err); !slices.Equal(got, tt.want) {
				t.Fatalf("Make() = %v, want faults %v", err, tt.want)
			}
		})
	}
}

func TestRejectsBadRatings(t *testing.T) {
	t.Parallel()
	r := []float64{0, math.NaN(), math.Inf(1), math.Inf(-1), 1e301, -1e300, 1e300, -2e300}
	res, err := Make(r, DefaultOptions())
	want := []string{"ratings[1]", "ratings[2]", "ratings[3]", "ratings[4]", "ratings[7]"}
	if got := faults(t, err); !slices.Equal(got, want) {
		t.Fatalf("Make() = %v, want faults %v", err, want)
	}
	if len(res.Matches) != 0 || len(res.Unmatched) != 0 {
		t.Fatalf("an error came with a result: %+v", res)
	}
	// Bad options and bad ratings are reported together.
	o := DefaultOptions()
	o.TeamSize = 0
	_, err = Make([]float64{math.NaN()}, o)
	if got := faults(t, err); !slices.Equal(got, []string{"team_size", "ratings[0]"}) {
		t.Fatalf("Make() = %v", err)
	}
}

// testOptions builds options for the table below.
func testOptions(s Strategy, teamSize int, initial, step, maxInterval float64) Options {
	return Options{TeamSize: teamSize, Interval: Interval{Initial: initial, Step: step, Max: maxInterval}, Strategy: s}
}

// expected is the result in short: each match as its pairs (team 0 player,
// team 1 player) with each pair's interval.
type expected struct {
	matches   [][][2]int
	intervals [][]float64
	unmatched []int
}

func TestExamples(t *testing.T) {
	t.Parallel()
	const (
		greedy = GreedyPairs
		window = RatingWindow
	)
	inf := math.Inf(1)
	equal := slices.Repeat([]float64{1500}, 9)
	tests := []struct {
		name    string
		ratings []float64
		opts    Options
		want    expected
	}{
		{"empty queue greedy", nil, testOptions(greedy, 5, 25, 25, inf), expected{}},
		{"empty queue window", []float64{}, testOptions(window, 5, 25, 25, inf), expected{}},
		{"one player", []float64{1}, testOptions(window, 1, 25, 25, inf), expected{unmatched: []int{0}}},
		{"fewer than 2*team size greedy", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, testOptions(greedy, 5, 25, 25, inf),
			expected{unmatched: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}}},
		{"fewer than 2*team size window", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, testOptions(window, 5, 25, 25, inf),
			expected{unmatched: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}}},
		{"team size 1 greedy", []float64{100, 300, 110, 290}, testOptions(greedy, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 2}}, {{1, 3}}}, intervals: [][]float64{{25}, {25}}}},
		{"team size 1 window", []float64{100, 300, 110, 290}, testOptions(window, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 2}}, {{1, 3}}}, intervals: [][]float64{{25}, {25}}}},
		// 100 is as far from 90 as from 110: the older one wins, whichever side it is on.
		{"tie below goes to the older", []float64{100, 90, 110}, testOptions(greedy, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}}}, intervals: [][]float64{{25}}, unmatched: []int{2}}},
		{"tie above goes to the older", []float64{100, 110, 90}, testOptions(greedy, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}}}, intervals: [][]float64{{25}}, unmatched: []int{2}}},
		{"ties in both buckets", []float64{100, 90, 110, 110, 90}, testOptions(greedy, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}}, {{2, 3}}}, intervals: [][]float64{{25}, {25}}, unmatched: []int{4}}},
		{"tie window", []float64{100, 110, 90, 50}, testOptions(window, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}}, {{2, 3}}}, intervals: [][]float64{{25}, {50}}}},
		{"tie window mirrored", []float64{100, 90, 110, 50}, testOptions(window, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}}, {{2, 3}}}, intervals: [][]float64{{25}, {75}}}},
		{"all equal greedy", equal, testOptions(greedy, 2, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}}, intervals: [][]float64{{25, 25}, {25, 25}}, unmatched: []int{8}}},
		{"all equal window", equal, testOptions(window, 2, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}}, intervals: [][]float64{{25, 25}, {25, 25}}, unmatched: []int{8}}},
		{"all equal, interval 0", equal[:4], testOptions(window, 2, 0, 1, 0),
			expected{matches: [][][2]int{{{0, 1}, {2, 3}}}, intervals: [][]float64{{0, 0}}}},
		// 0 finds nobody within 50 and leaves; the others still pair, 2000-2040 at 50 = max.
		{"max reached greedy", []float64{0, 1000, 1010, 2000, 2040}, testOptions(greedy, 1, 25, 25, 50),
			expected{matches: [][][2]int{{{1, 2}}, {{3, 4}}}, intervals: [][]float64{{25}, {50}}, unmatched: []int{0}}},
		{"max reached window", []float64{0, 1000, 1010, 2000, 2040}, testOptions(window, 1, 25, 25, 50),
			expected{matches: [][][2]int{{{1, 2}}, {{3, 4}}}, intervals: [][]float64{{25}, {50}}, unmatched: []int{0}}},
		{"max reached window 2v2", []float64{0, 1000, 1010, 1020, 1030, 20}, testOptions(window, 2, 25, 25, 50),
			expected{matches: [][][2]int{{{1, 2}, {4, 3}}}, intervals: [][]float64{{25, 25}}, unmatched: []int{0, 5}}},
		// (4,5) cannot be completed with only 6 left: the pair is dissolved.
		{"partial match dissolved", []float64{0, 10, 20, 30, 40, 50, 60}, testOptions(greedy, 2, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}, {2, 3}}}, intervals: [][]float64{{25, 25}}, unmatched: []int{4, 5, 6}}},
		// (0,1) forms, 2 and 3 find nobody within 50, then one player is left: dissolved.
		{"partial match dissolved after anchors left", []float64{0, 10, 1000, 2000, 3000}, testOptions(greedy, 2, 25, 25, 50),
			expected{unmatched: []int{0, 1, 2, 3, 4}}},
		{"accepted at initial", []float64{0, 25}, testOptions(greedy, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}}}, intervals: [][]float64{{25}}}},
		{"accepted at initial+step", []float64{0, 25.5}, testOptions(greedy, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}}}, intervals: [][]float64{{50}}}},
		{"accepted at initial+2*step", []float64{75, 0}, testOptions(greedy, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}}}, intervals: [][]float64{{75}}}},
		{"accepted after 123457 steps", []float64{0, 123456.5}, testOptions(greedy, 1, 0, 1, inf),
			expected{matches: [][][2]int{{{0, 1}}}, intervals: [][]float64{{123457}}}},
		{"accepted at interval 0", []float64{7, 7}, testOptions(window, 1, 0, 1, 0),
			expected{matches: [][][2]int{{{0, 1}}}, intervals: [][]float64{{0}}}},
		{"huge and negative greedy", []float64{1e12, -1e12, 1e12 + 30, -1e12 - 30}, testOptions(greedy, 1, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 2}}, {{1, 3}}}, intervals: [][]float64{{50}, {50}}}},
		// Window {0,4,2,5}: pairs (0,4) and (2,5); 5 joins 0 on team 0 to balance (10 apart,
		// not 30). Then {1,3,6,7} with a window of 1e12+25: 6 joins 1 (20 apart, not 40).
		{"huge and negative window", []float64{1e12, -1e12, 1e12 + 30, -1e12 - 30, 1e12 + 10, 1e12 + 50, -5, 5}, testOptions(window, 2, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 4}, {5, 2}}, {{1, 3}, {6, 7}}}, intervals: [][]float64{{25, 25}, {50, 25}}}},
		// The window takes 1003, 990 and 1020 around 1000; greedy pairs 1000-1003 then 990-1020.
		{"window balances the sides", []float64{1000, 990, 1020, 1003, 2000}, testOptions(window, 2, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 1}, {3, 2}}}, intervals: [][]float64{{25, 25}}, unmatched: []int{4}}},
		{"greedy on the same queue", []float64{1000, 990, 1020, 1003, 2000}, testOptions(greedy, 2, 25, 25, inf),
			expected{matches: [][][2]int{{{0, 3}, {1, 2}}}, intervals: [][]float64{{25, 50}}, unmatched: []int{4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Make(tt.ratings, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got expected
			for _, m := range res.Matches {
				var pairs [][2]int
				var intervals []float64
				for _, p := range m.Pairs {
					pairs = append(pairs, p.Players)
					intervals = append(intervals, p.Interval)
				}
				got.matches = append(got.matches, pairs)
				got.intervals = append(got.intervals, intervals)
			}
			got.unmatched = res.Unmatched
			if !slices.EqualFunc(got.matches, tt.want.matches, slices.Equal) ||
				!slices.EqualFunc(got.intervals, tt.want.intervals, slices.Equal) ||
				!slices.Equal(got.unmatched, tt.want.unmatched) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			if err := checkResult(tt.ratings, tt.opts, res); err != nil {
				t.Fatal(err)
			}
			if err := sameResult(tt.ratings, res, ref(tt.ratings, tt.opts), true); err != nil {
				t.Fatalf("differs from the reference: %v", err)
			}
		})
	}
}

func TestMatchFields(t *testing.T) {
	t.Parallel()
	r := []float64{1e12, -1e12, 1e12 + 30, -1e12 - 30, 1e12 + 10, 1e12 + 50, -5, 5}
	res, err := Make(r, testOptions(RatingWindow, 2, 25, 25, math.Inf(1)))
	if err != nil {
		t.Fatal(err)
	}
	m0, m1 := res.Matches[0], res.Matches[1]
	check := func(name string, got, want any) {
		t.Helper()
		if !equalAny(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("match 0 team 0", m0.Teams[0].Players, []int{0, 5})
	check("match 0 team 1", m0.Teams[1].Players, []int{4, 2})
	check("match 0 totals", [2]float64{m0.Teams[0].RatingTotal, m0.Teams[1].RatingTotal}, [2]float64{2e12 + 50, 2e12 + 40})
	check("match 0 differences", [3]float64{m0.SkillDifference, m0.AverageDifference, m0.Interval}, [3]float64{10, 5, 50})
	check("match 0 pair differences", [2]float64{m0.Pairs[0].Difference, m0.Pairs[1].Difference}, [2]float64{10, 20})
	check("match 1 totals", [2]float64{m1.Teams[0].RatingTotal, m1.Teams[1].RatingTotal}, [2]float64{-1e12 - 5, -1e12 - 25})
	// The anchor -1e12 needs 1e12+5 to reach 5: 25 + 39999999999*25.
	check("match 1 differences", [3]float64{m1.SkillDifference, m1.AverageDifference, m1.Interval}, [3]float64{20, 10, 1e12 + 25})

	// Greedy: the thesis's sides, anchors on team 0.
	res, err = Make([]float64{1000, 990, 1020, 1003, 2000}, testOptions(GreedyPairs, 2, 25, 25, math.Inf(1)))
	if err != nil {
		t.Fatal(err)
	}
	g := res.Matches[0]
	check("greedy team 0", g.Teams[0].Players, []int{0, 1})
	check("greedy team 1", g.Teams[1].Players, []int{3, 2})
	check("greedy differences", [3]float64{g.SkillDifference, g.AverageDifference, g.Interval}, [3]float64{33, 16.5, 50})
}

func equalAny(a, b any) bool {
	if x, ok := a.([]int); ok {
		return slices.Equal(x, b.([]int))
	}
	return a == b
}

func TestStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		iv    Interval
		d     float64
		wantK float64
		wantV float64
	}{
		{"zero distance", Interval{25, 25, 0}, 0, 0, 25},
		{"at initial", Interval{25, 25, 0}, 25, 0, 25},
		{"just above initial", Interval{25, 25, 0}, 25.000000000000004, 1, 50},
		{"at initial+step", Interval{25, 25, 0}, 50, 1, 50},
		{"initial 0", Interval{0, 25, 0}, 1e-300, 1, 25},
		{"large k", Interval{0, 1, 0}, 123456.5, 123457, 123457},
		{"step 0.1 rounding", Interval{0, 0.1, 0}, 0.3, 3, 0.30000000000000004}, // 3*0.1 rounds up
		{"step huge", Interval{0, 1e300, 0}, 1e-300, 1, 1e300},
		{"q overflows", Interval{0, 5e-324, 0}, 1e12, math.Inf(1), 1e12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, v := tt.iv.step(tt.d)
			if k != tt.wantK || v != tt.wantV {
				t.Fatalf("step(%g) = (%v, %v), want (%v, %v)", tt.d, k, v, tt.wantK, tt.wantV)
			}
		})
	}
}

// The closed form agrees with its definition: the value at k covers d, the one before does
// not; for distances where the literal loop is affordable, it agrees with the loop.
func TestStepProperties(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200_000 {
		iv := Interval{Max: math.Inf(1)}
		switch rng.IntN(4) {
		case 0:
			iv.Initial = 25
		case 1:
			iv.Initial = 0
		case 2:
			iv.Initial = math.Ldexp(rng.Float64(), rng.IntN(80)-40)
		default:
			iv.Initial = float64(rng.IntN(100))
		}
		iv.Step = math.Ldexp(rng.Float64()+0.01, rng.IntN(120)-80)
		if rng.IntN(4) == 0 {
			iv.Step = math.Ldexp(1, -1074+rng.IntN(40)) // subnormal steps
		}
		d := math.Ldexp(rng.Float64(), rng.IntN(100)-30)
		if rng.IntN(4) == 0 {
			d = iv.Initial + float64(rng.IntN(1000))*iv.Step // exactly on the sequence, mostly
		}
		k, v := iv.step(d)
		if math.IsInf(k, 1) {
			if v != d || (d-iv.Initial)/iv.Step <= math.MaxFloat64 {
				t.Fatalf("case %d: %+v d=%g: (%v, %v)", i, iv, d, k, v)
			}
			continue
		}
		if v != iv.at(k) || !(v >= d) || k != math.Trunc(k) || k < 0 {
			t.Fatalf("case %d: %+v d=%g: (%v, %v) does not cover d", i, iv, d, k, v)
		}
		if k > 0 {
			prev := k - 1
			if k > 1<<53 {
				prev = math.Nextafter(k, 0)
			}
			if iv.at(prev) >= d {
				t.Fatalf("case %d: %+v d=%g: k=%v is not the smallest (k-1 gives %v)", i, iv, d, k, iv.at(prev))
			}
		}
		if k < 5000 {
			if w := refStep(iv, d); w != v {
				t.Fatalf("case %d: %+v d=%g: %v, the literal loop gives %v", i, iv, d, v, w)
			}
		}
	}
}

func TestStepIsFastForTinySteps(t *testing.T) {
	t.Parallel()
	// Widening from 25 by 1e-9 up to a distance of 1e12: 1e21 steps if done literally.
	r := make([]float64, 1000)
	for i := range r {
		r[i] = float64(i) * 1e9
	}
	for _, s := range []Strategy{GreedyPairs, RatingWindow} {
		res, err := Make(r, testOptions(s, 5, 25, 1e-9, math.Inf(1)))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) != 100 {
			t.Fatalf("%s: %d matches", s, len(res.Matches))
		}
		if err := checkResult(r, testOptions(s, 5, 25, 1e-9, math.Inf(1)), res); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	if got := Summarize(nil); got != (Summary{}) {
		t.Fatalf("Summarize(nil) = %+v", got)
	}
	matches := []Match{
		{SkillDifference: 10, AverageDifference: 5, Pairs: []Pair{{Difference: 1}, {Difference: 2}}},
		{SkillDifference: 0, AverageDifference: 0, Pairs: []Pair{{Difference: 0}, {Difference: 7}}},
		{SkillDifference: 4, AverageDifference: 2, Pairs: []Pair{{Difference: 3}, {Difference: 3}}},
	}
	want := Summary{
		Matches:           3,
		SkillDifference:   Distribution{Mean: 14.0 / 3, Median: 4, Max: 10},
		AverageDifference: Distribution{Mean: 7.0 / 3, Median: 2, Max: 5},
		PairDifference:    Distribution{Mean: 16.0 / 6, Median: 2.5, Max: 7},
	}
	if got := Summarize(matches); got != want {
		t.Fatalf("Summarize = %+v\nwant        %+v", got, want)
	}
	if matches[0].SkillDifference != 10 || matches[1].Pairs[1].Difference != 7 {
		t.Fatal("Summarize changed its input")
	}
	huge := []Match{{SkillDifference: 1e308, Pairs: []Pair{{}}}, {SkillDifference: 1e308, Pairs: []Pair{{}}}}
	if got := Summarize(huge).SkillDifference.Mean; got != 1e308 {
		t.Fatalf("mean of huge values = %g", got)
	}
}
