package queuestats

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// BenchmarkStatsSnapshot is the leader's snapshot of a queue that matched 300 tickets a second
// for the whole WaitWindow (180,000 waits), one second after the last: the work the tick
// goroutine does once per StatsRefresh.
func BenchmarkStatsSnapshot(b *testing.B) {
	k := NewTracker()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	sec := int(queue.WaitWindow / time.Second)
	for s := range sec {
		now := start.Add(time.Duration(s) * time.Second)
		for range 30 { // 30 matches of 10 tickets a second
			waits := make([]WaitSample, 10)
			for i := range waits {
				waits[i] = WaitSample{At: now, Band: int8(rng.IntN(len(queue.Bands))), Seconds: rng.ExpFloat64() * 20}
			}
			k.Matched(now, 0.9, false, waits)
		}
	}
	now := start.Add(queue.WaitWindow)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		for range 30 {
			waits := make([]WaitSample, 10)
			for i := range waits {
				waits[i] = WaitSample{At: now, Band: int8(rng.IntN(len(queue.Bands))), Seconds: rng.ExpFloat64() * 20}
			}
			k.Matched(now, 0.9, false, waits)
		}
		k.Snapshot("q", now, start)
	}
}
