package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// BenchRecord measures RecordResult on st: 5v5 results, each with a new match id, from 16
// goroutines (b.SetParallelism), with the default model and a JSON response as the service
// renders one. It reports results/s and the 50th and 99th percentile latency of one call.
//
// Two sub-benchmarks: "disjoint", where each goroutine draws its players from 64 of its own
// (as in real play, where a player is in one match at a time, so concurrent results share no
// rating), and "shared", where all draw from one pool of 1,000 (concurrent results often share
// players and wait for each other's row locks: a stress case).
//
// On a shared machine results/s says as much about the neighbours as about the store, so it
// also reports CPU time per result: this process's (the benchmark's own work, JSON included,
// and the store's client side) as go-cpu-us/op, and, if serverCPU is not nil, the database
// server's as db-cpu-us/op (serverCPU returns the server's CPU time so far).
func BenchRecord(b *testing.B, st ratings.Store, serverCPU func() time.Duration) {
	b.Run("disjoint", func(b *testing.B) { benchRecord(b, st, 64, false, serverCPU) })
	b.Run("shared", func(b *testing.B) { benchRecord(b, st, 1000, true, serverCPU) })
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchRecord(b *testing.B, st ratings.Store, pool int, shared bool, serverCPU func() time.Duration) {
	ctx := context.Background()
	var mu sync.Mutex
	var lat []time.Duration
	var seq, workers atomic.Int64
	run := time.Now().UnixNano()
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	var db0 time.Duration
	if serverCPU != nil {
		db0 = serverCPU()
	}
	b.ResetTimer()
	start, go0 := time.Now(), processCPU()
	b.RunParallel(func(pb *testing.PB) {
		w := workers.Add(1)
		rng := rand.New(rand.NewPCG(uint64(w), uint64(run)))
		prefix := fmt.Sprintf("w%d-", w)
		if shared {
			prefix = ""
		}
		var mine []time.Duration
		for pb.Next() {
			n := seq.Add(1)
			var m match
			m.id = fmt.Sprintf("bench-%d-%d", run, n)
			m.mapName = []string{"ns2_tram", "ns2_veil", "ns2_summit"}[n%3]
			m.winner = int(n % 2)
			seen := map[int]bool{}
			for len(seen) < 10 {
				k := rng.IntN(pool)
				if !seen[k] {
					seen[k] = true
					m.teams[len(seen)%2] = append(m.teams[len(seen)%2], fmt.Sprintf("%splayer-%04d", prefix, k))
				}
			}
			r := m.result()
			t0 := time.Now()
			if _, err := st.RecordResult(ctx, request(r), applyModel(r)); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed, goCPU := time.Since(start), processCPU()-go0
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(len(lat)) }
	b.ReportMetric(perOp(goCPU), "go-cpu-us/op")
	if serverCPU != nil {
		b.ReportMetric(perOp(serverCPU()-db0), "db-cpu-us/op")
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "results/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
