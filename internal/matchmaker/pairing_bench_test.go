package matchmaker

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var pairingStrategies = []Strategy{StrategyGreedyPairs, StrategyRatingWindow}

// pairingThesisStats is the thesis's test population: four stats uniform in [0,1].
func pairingThesisStats(seed uint64, n int) []Stats {
	rng := rand.New(rand.NewPCG(seed, 0x7e515))
	s := make([]Stats, n)
	for i := range s {
		s[i] = Stats{rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()}
	}
	return s
}

func pairingThesisRatings(seed uint64, n int, c Coefficients) []float64 {
	r := make([]float64, n)
	for i, s := range pairingThesisStats(seed, n) {
		r[i] = SkillRating(s, c)
	}
	return r
}

// BenchmarkPairingThesis500 is the thesis's test (Table 8.4: 14.44 ms per match): a queue of
// 500 players rated with the default coefficients, matched 5v5 into 50 matches. Each
// iteration rates and matches the whole queue.
func BenchmarkPairingThesis500(b *testing.B) {
	for _, s := range pairingStrategies {
		b.Run(string(s), func(b *testing.B) {
			stats := pairingThesisStats(1, 500)
			c := DefaultCoefficients()
			o := DefaultPairingOptions()
			o.Strategy = s
			ratings := make([]float64, len(stats))
			b.ReportAllocs()
			for b.Loop() {
				for i, st := range stats {
					ratings[i] = SkillRating(st, c)
				}
				res, err := MakeMatches(ratings, o)
				if err != nil || len(res.Matches) != 50 {
					b.Fatalf("%d matches, %v", len(res.Matches), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/50, "ns/match")
		})
	}
}

// BenchmarkPairingQueue measures how the time per player grows with the queue: it should
// stay roughly flat (O(N log N) with a small log factor from the sort).
func BenchmarkPairingQueue(b *testing.B) {
	for _, s := range pairingStrategies {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/players=%d", s, n), func(b *testing.B) {
				ratings := pairingThesisRatings(2, n, DefaultCoefficients())
				o := DefaultPairingOptions()
				o.Strategy = s
				b.ReportAllocs()
				for b.Loop() {
					res, err := MakeMatches(ratings, o)
					if err != nil || len(res.Matches) != n/10 {
						b.Fatalf("%d matches, %v", len(res.Matches), err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/player")
			})
		}
	}
}

// BenchmarkPairingTeamSize16 is the worst case of the side search: 2^15 steps per match.
func BenchmarkPairingTeamSize16(b *testing.B) {
	ratings := pairingThesisRatings(3, 10_000, DefaultCoefficients())
	o := DefaultPairingOptions()
	o.TeamSize = 16
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MakeMatches(ratings, o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/player")
}
