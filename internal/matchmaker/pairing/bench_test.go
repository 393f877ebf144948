package pairing

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
)

var strategies = []Strategy{GreedyPairs, RatingWindow}

// thesisStats is the thesis's test population: four stats uniform in [0,1].
func thesisStats(seed uint64, n int) []skill.Stats {
	rng := rand.New(rand.NewPCG(seed, 0x7e515))
	s := make([]skill.Stats, n)
	for i := range s {
		s[i] = skill.Stats{Accuracy: rng.Float64(), ReactionTime: rng.Float64(),
			Awareness: rng.Float64(), Movement: rng.Float64()}
	}
	return s
}

func thesisRatings(seed uint64, n int, c skill.Coefficients) []float64 {
	r := make([]float64, n)
	for i, s := range thesisStats(seed, n) {
		r[i] = skill.Rating(s, c)
	}
	return r
}

// BenchmarkThesis500 is the thesis's test (Table 8.4; docs/performance.md sets the two side
// by side): a queue of 500 players rated with the default coefficients, matched 5v5 into 50
// matches. Each iteration rates and matches the whole queue.
func BenchmarkThesis500(b *testing.B) {
	for _, s := range strategies {
		b.Run(string(s), func(b *testing.B) {
			stats := thesisStats(1, 500)
			c := skill.DefaultCoefficients()
			o := DefaultOptions()
			o.Strategy = s
			ratings := make([]float64, len(stats))
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				for i, st := range stats {
					ratings[i] = skill.Rating(st, c)
				}
				res, err := Make(ratings, o)
				if err != nil || len(res.Matches) != 50 {
					b.Fatalf("%d matches, %v", len(res.Matches), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/50, "ns/match")
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkQueue measures how the time per player grows with the queue: it should
// stay roughly flat (O(N log N) with a small log factor from the sort).
func BenchmarkQueue(b *testing.B) {
	for _, s := range strategies {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/players=%d", s, n), func(b *testing.B) {
				ratings := thesisRatings(2, n, skill.DefaultCoefficients())
				o := DefaultOptions()
				o.Strategy = s
				b.ReportAllocs()
				cpu := cpuTime(b)
				for b.Loop() {
					res, err := Make(ratings, o)
					if err != nil || len(res.Matches) != n/10 {
						b.Fatalf("%d matches, %v", len(res.Matches), err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/player")
				b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkTeamSize16 is the worst case of the side search: 2^15 steps per match.
func BenchmarkTeamSize16(b *testing.B) {
	ratings := thesisRatings(3, 10_000, skill.DefaultCoefficients())
	o := DefaultOptions()
	o.TeamSize = 16
	b.ReportAllocs()
	cpu := cpuTime(b)
	for b.Loop() {
		if _, err := Make(ratings, o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/player")
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process has used (user and system, all threads, the GC's
// included), in nanoseconds: the cpu-ns/op metric, which other jobs on a shared machine
// inflate far less than the wall time.
func cpuTime(b *testing.B) int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return u.Utime.Nano() + u.Stime.Nano()
}
