package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// reportCPU reports the process's user and system time per op since start, beside the wall
// time per op: on a host shared by other work the wall time is mostly the waits for a core.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTicketBody is the cost of one arrival's body (a party with probability 0.2).
func BenchmarkTicketBody(b *testing.B) {
	l := &load{c: config{seed: 7, parties: 0.2, teamSize: 5, ratingSD: 200}, runID: "a1b2c3"}
	b.ReportAllocs()
	start := cpuTime()
	for n := range int64(b.N) {
		l.ticketBody(n)
	}
	reportCPU(b, start)
}

// BenchmarkBackendsEvent is what one ticket's end costs the -backends 8 streams: every
// backend reads the event, and the ticket's own hands it to the ticket, which records it.
// The event comes before the ticket waits (as when its 201 is slower than its match), so
// that the benchmark needs no goroutine; an expiry, as a match would post its result.
func BenchmarkBackendsEvent(b *testing.B) {
	l := &load{c: config{timeout: 15 * time.Second}, matches: map[string]*matchInfo{}}
	backends := make([]*backend, 8)
	for i := range backends {
		backends[i] = newTestBackend(l, i)
	}
	ctx := context.Background()
	at := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC).Format(time.RFC3339Nano)
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for n := range b.N {
		id := fmt.Sprintf("tk-%08d", n)
		data := fmt.Appendf(nil, `{"seq":%d,"queue":"soak-1a2b","type":"expired","ticket_id":%q,"reason":"ttl","at":%q}`, n, id, at)
		seen := time.Now()
		own := backends[n%len(backends)]
		gen := own.begin()
		for _, bk := range backends {
			bk.dispatch(data, seen)
		}
		own.wait(ctx, ctx, id, gen)
	}
	reportCPU(b, start)
	if len(l.outcomes) != b.N {
		b.Fatalf("%d outcomes of %d events", len(l.outcomes), b.N)
	}
}
