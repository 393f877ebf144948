package tick

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
)

// benchRegions are the regions of the latency benchmarks.
var benchRegions = []string{"ap-south", "eu-west", "us-east", "us-west"}

// benchQueue is the queue: n searching tickets, 80% solo and 20%
// parties of 2-5 (uniform); ratings thesis-like, normal around 1000 with sd 200 (a party's
// players around its own level, sd 50); waits spread uniformly over 0..60 s so that the
// expansion steps differ; no ticket expires. With regions, every ticket has latencies to
// the four: 20-60 ms to its home region, 40-200 ms to the others.
func benchQueue(seed uint64, n int, regions bool) ([]Ticket, float64) {
	rng := rand.New(rand.NewPCG(seed, 0xbe7c4))
	const now = 1000.0
	// Arrival order, the oldest first, as the queue service keeps them (and allocates
	// them: a ticket's slices lie near the previous ticket's).
	since := make([]float64, n)
	for i := range since {
		since[i] = now - 60*rng.Float64()
	}
	slices.Sort(since)
	tk := make([]Ticket, n)
	for i := range tk {
		size := 1
		if rng.IntN(5) == 0 {
			size = 2 + rng.IntN(4)
		}
		level := 1000 + 200*rng.NormFloat64()
		r := make([]float64, size)
		for j := range r {
			r[j] = level
			if size > 1 {
				r[j] += 50 * rng.NormFloat64()
			}
		}
		tk[i] = Ticket{Ratings: r, WaitingSince: since[i], ExpiresAt: now + 240}
		if regions {
			home := rng.IntN(len(benchRegions))
			lat := make([]RegionLatency, len(benchRegions))
			for j, name := range benchRegions {
				lat[j] = RegionLatency{Region: name, MS: 40 + 160*rng.Float64()}
				if j == home {
					lat[j].MS = 20 + 40*rng.Float64()
				}
			}
			tk[i].Latencies = lat
		}
	}
	return tk, now
}

// benchConfig is DESIGN's example queue: 5v5, interval 25 widening to 50 after 10 s and
// 150 after 30 s; with regions, 60 ms widening to 120 ms after 20 s.
func benchConfig(strategy string, regions bool) Config {
	c := Config{TeamSize: 5, Strategy: strategy,
		Interval: []Step{{0, 25}, {10, 50}, {30, 150}}}
	if regions {
		c.MaxLatency = []Step{{0, 60}, {20, 120}}
	}
	return c
}

// BenchmarkRun is one pass over the queue; each iteration is a whole pass. Beside
// the wall time (ns/op) it reports the CPU time of the process per pass (cpu-ns/op, all
// threads, the garbage collector's included): on a shared machine the wall time also
// counts the time the pass waited for a core.
func BenchmarkRun(b *testing.B) {
	for _, regions := range []bool{false, true} {
		for _, s := range []string{RatingWindow, GreedyPairs} {
			for _, n := range []int{5_000, 100_000} {
				name := fmt.Sprintf("%s/tickets=%d", s, n)
				if regions {
					name = fmt.Sprintf("regions/%s/tickets=%d", s, n)
				}
				b.Run(name, func(b *testing.B) {
					tk, now := benchQueue(1, n, regions)
					benchRun(b, tk, now, benchConfig(s, regions))
				})
			}
		}
	}
}

// cpuTime is the CPU time the process has used (user and system), in nanoseconds.
func cpuTime() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return u.Utime.Nano() + u.Stime.Nano()
}

// BenchmarkTeamSize16 is the largest team size on the queue of 5,000 tickets: a
// match has up to 32 tickets, split by meeting in the middle.
func BenchmarkTeamSize16(b *testing.B) {
	tk, now := benchQueue(1, 5_000, false)
	cfg := benchConfig(RatingWindow, false)
	cfg.TeamSize = 16
	benchRun(b, tk, now, cfg)
}

// benchRun times whole passes; beside the wall time it reports the process's CPU time per
// pass and the matches a pass makes.
func benchRun(b *testing.B, tk []Ticket, now float64, cfg Config) {
	var matches int
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		res, err := Run(tk, now, cfg)
		if err != nil {
			b.Fatal(err)
		}
		matches = len(res.Matches)
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(matches), "matches")
}

// benchBackfills adds to the queue n backfill tickets, in arrival order among the
// others: 5v5 matches that lost one to three players (a random team each, sometimes both),
// their players rated like the queue's, half of them with bots and the server's bot rule,
// with regions a home region each.
func benchBackfills(tk []Ticket, seed uint64, n int, regions bool) []Ticket {
	rng := rand.New(rand.NewPCG(seed, 0xbacf))
	out := make([]Ticket, 0, len(tk)+n)
	every := len(tk) / n
	for i, t := range tk {
		out = append(out, t)
		if i%every != every-1 || len(out) >= len(tk)+n {
			continue
		}
		b := &Backfill{}
		lost := 1 + rng.IntN(3)
		for k := range 2 {
			for range 5 {
				b.Teams[k].Players = append(b.Teams[k].Players, max(0, 1000+200*rng.NormFloat64()))
			}
		}
		for range lost {
			k := rng.IntN(2)
			if len(b.Teams[k].Players) > 0 {
				b.Teams[k].Players = b.Teams[k].Players[1:]
				b.OpenSlots[k]++
			}
		}
		if rng.IntN(2) == 0 {
			b.Bots = &teams.BotRule{MeanWeight: 1000, TargetPlayers: 10, RecommendedMin: 8, RecommendedMax: 12}
			for k := range 2 {
				for range b.OpenSlots[k] {
					b.Teams[k].Bots = append(b.Teams[k].Bots, 900+200*rng.Float64())
				}
			}
		}
		x := Ticket{WaitingSince: t.WaitingSince, ExpiresAt: t.ExpiresAt, Backfill: b}
		if regions {
			x.Latencies = []RegionLatency{{Region: benchRegions[rng.IntN(len(benchRegions))]}}
		}
		out = append(out, x)
	}
	return out
}

// BenchmarkBackfill is the figure: 1,000 running matches each with a backfill ticket
// and 100,000 searching tickets, one whole pass per iteration (the backfills served first,
// then the anchors); fills are reported beside the matches.
func BenchmarkBackfill(b *testing.B) {
	for _, regions := range []bool{false, true} {
		name := "backfills=1000/tickets=100000"
		if regions {
			name = "regions/" + name
		}
		b.Run(name, func(b *testing.B) {
			tk, now := benchQueue(1, 100_000, regions)
			tk = benchBackfills(tk, 2, 1_000, regions)
			cfg := benchConfig(RatingWindow, regions)
			var fills, joiners int
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				res, err := Run(tk, now, cfg)
				if err != nil {
					b.Fatal(err)
				}
				fills, joiners = len(res.Fills), 0
				for _, f := range res.Fills {
					joiners += len(f.Joiners)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(fills), "fills")
			b.ReportMetric(float64(joiners), "joiners")
		})
	}
}
