package tick

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// BenchmarkRun is one pass over the queue; each iteration is a whole pass. Beside
// the wall time (ns/op) it reports the CPU time of the process per pass (cpu-ns/op, all
// threads, the garbage collector's included): on a shared machine the wall time also
// counts the time the pass waited for a core.
func BenchmarkRun(b *testing.B) {
	for _, regions := range []bool{false, true} {
		for _, s := range []string{matchrules.RatingWindow, matchrules.GreedyPairs} {
			for _, n := range []int{5_000, 100_000} {
				name := fmt.Sprintf("%s/tickets=%d", s, n)
				if regions {
					name = fmt.Sprintf("regions/%s/tickets=%d", s, n)
				}
				b.Run(name, func(b *testing.B) {
					tk, now := testqueue.BenchQueue(1, n, regions)
					benchRun(b, tk, now, testqueue.BenchConfig(s, regions))
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
	tk, now := testqueue.BenchQueue(1, 5_000, false)
	cfg := testqueue.BenchConfig(matchrules.RatingWindow, false)
	cfg.TeamSize = 16
	benchRun(b, tk, now, cfg)
}

// benchRun times whole passes; beside the wall time it reports the process's CPU time per
// pass and the matches a pass makes.
func benchRun(b *testing.B, tk []matchpool.Ticket, now float64, cfg matchrules.Config) {
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
			tk, now := testqueue.BenchQueue(1, 100_000, regions)
			tk = testqueue.BenchBackfills(tk, 2, 1_000, regions)
			cfg := testqueue.BenchConfig(matchrules.RatingWindow, regions)
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
