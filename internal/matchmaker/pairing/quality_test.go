package pairing

import (
	"fmt"
	"math"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
)

// qualityStats summarises the matches of many seeded thesis queues.
type qualityStats struct {
	Summary                   // over every match of every queue
	meanQueueMax      float64 // mean over queues of the largest AverageDifference
	matchesPerQueue   float64
	unmatchedPerQueue float64
}

func measureQueues(t *testing.T, seeds int, c skill.Coefficients, o Options) qualityStats {
	t.Helper()
	var q qualityStats
	var all []Match
	unmatched := 0
	for seed := range uint64(seeds) {
		r := thesisRatings(seed, 500, c)
		res, err := Make(r, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkResult(r, o, res); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		all = append(all, res.Matches...)
		unmatched += len(res.Unmatched)
		q.meanQueueMax += Summarize(res.Matches).AverageDifference.Max / float64(seeds)
	}
	q.Summary = Summarize(all)
	q.matchesPerQueue = float64(len(all)) / float64(seeds)
	q.unmatchedPerQueue = float64(unmatched) / float64(seeds)
	return q
}

// noMatchmaking is the thesis's baseline (Table 8.3, "No Matchmaking": 143.476):
// every ten players in queue order, five against five.
func noMatchmaking(seeds int, c skill.Coefficients) float64 {
	sum, n := 0.0, 0
	for seed := range uint64(seeds) {
		r := thesisRatings(seed, 500, c)
		for i := 0; i < len(r); i += 10 {
			var t0, t1 float64
			for j := range 5 {
				t0 += r[i+j]
				t1 += r[i+5+j]
			}
			sum += math.Abs(t0-t1) / 5
			n++
		}
	}
	return sum / float64(n)
}

// TestQualityOnThesisQueues reproduces the thesis's test (500 players, four stats
// uniform in [0,1], 5v5, interval 25 widening by 25) over many seeds and compares the
// strategies. The thesis reports a mean team skill-rating difference of 4.48 (default
// coefficients) and 4.16 (optimised) with its greedy rule (Table 8.3).
func TestQualityOnThesisQueues(t *testing.T) {
	t.Parallel()
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for _, tc := range []struct {
		name string
		c    skill.Coefficients
	}{
		{"default coefficients", skill.DefaultCoefficients()},
		{"optimised coefficients", skill.Coefficients{Accuracy: 0.7072, ReactionTime: 0.544, Awareness: 0.272, Movement: 0.2}},
	} {
		logf := func(label string, q qualityStats) {
			t.Logf("%-24s %-14s %4.1f matches/queue %4.1f unmatched/queue | average_difference mean %6.3f median %6.3f max %7.3f (mean per-queue max %6.3f) | pair difference mean %6.3f median %6.3f max %8.3f",
				tc.name, label, q.matchesPerQueue, q.unmatchedPerQueue,
				q.AverageDifference.Mean, q.AverageDifference.Median, q.AverageDifference.Max, q.meanQueueMax,
				q.PairDifference.Mean, q.PairDifference.Median, q.PairDifference.Max)
		}
		t.Logf("%-24s no matchmaking: average_difference mean %.3f (thesis: 143.476)", tc.name, noMatchmaking(seeds, tc.c))
		o := DefaultOptions()
		o.Strategy = GreedyPairs
		greedy := measureQueues(t, seeds, tc.c, o)
		logf(string(GreedyPairs), greedy)
		o.Strategy = RatingWindow
		window := measureQueues(t, seeds, tc.c, o)
		logf(string(RatingWindow), window)

		// Every queue is drained into 50 matches, so the last matches are made of whoever
		// is left, far apart: they dominate both means (see the medians). Bounds keep a
		// margin over what was measured so that a regression fails and seed noise does not.
		for _, q := range []qualityStats{greedy, window} {
			if q.matchesPerQueue != 50 {
				t.Errorf("%s: %.1f matches per queue, want 50", tc.name, q.matchesPerQueue)
			}
		}
		if m := greedy.AverageDifference.Mean; m < 3 || m > 7 {
			t.Errorf("%s: greedy_pairs mean average_difference %.3f, expected near the thesis's 4.48", tc.name, m)
		}
		if m := greedy.AverageDifference.Median; m < 0.7 || m > 1.6 {
			t.Errorf("%s: greedy_pairs median average_difference %.3f, expected near the thesis's 1.15", tc.name, m)
		}
		if m := window.AverageDifference.Mean; m > 3 || m > 0.6*greedy.AverageDifference.Mean {
			t.Errorf("%s: rating_window mean average_difference %.3f, greedy_pairs %.3f", tc.name, m, greedy.AverageDifference.Mean)
		}
		if m := window.AverageDifference.Median; m > 0.2 {
			t.Errorf("%s: rating_window median average_difference %.3f, want under 0.2", tc.name, m)
		}

		// A live queue does not have to be drained: with interval.max the far-out players
		// wait for the next call instead of making lopsided matches.
		for _, maxInterval := range []float64{100, 50} {
			o.Interval.Max = maxInterval
			o.Strategy = GreedyPairs
			g := measureQueues(t, seeds, tc.c, o)
			logf(fmt.Sprintf("%s, max %g", GreedyPairs, maxInterval), g)
			o.Strategy = RatingWindow
			w := measureQueues(t, seeds, tc.c, o)
			logf(fmt.Sprintf("%s, max %g", RatingWindow, maxInterval), w)
			if w.AverageDifference.Mean >= g.AverageDifference.Mean {
				t.Errorf("%s, max %g: rating_window %.3f is not better than greedy_pairs %.3f", tc.name, maxInterval, w.AverageDifference.Mean, g.AverageDifference.Mean)
			}
		}
	}
}
