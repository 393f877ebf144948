package queuedb_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/dbtest"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// BenchmarkQueueCreateExclusiveTicket is BenchmarkQueueCreateTicket's creations made exclusive,
// beside 10,000 live claims of other players: what a batch pays for the claims lock taken
// shared and the read of its players' claims (create_claims.go). Interleave it with the
// build before the change (this file and bench_test.go compile there too):
//
//	go test -run '^$' -bench QueueCreateExclusiveTicket -cpu 16 -count 1 ./db/queuedb/
//
// with TEST_DATABASE_URL set; the metrics as BenchmarkQueueCreateTicket's.
func BenchmarkQueueCreateExclusiveTicket(b *testing.B) {
	qs, s := openQueueStore(b)
	ctx := context.Background()
	q := queue.DefaultQueue("bench")
	q.GameType = "ctf"
	if _, _, err := qs.PutQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	if _, err := s.Pool().Exec(ctx, `
INSERT INTO queue_claims (player_id, ticket_id, match_id, queue, until)
SELECT 'claimed-' || i, 'tk-claimed-' || i, 'mt-' || (i / 2), 'other', $1 FROM generate_series(1, 10000) AS i`,
		now.Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	benchCreates(b, qs, s.Pool(), now, func(tk *queue.Ticket) { tk.Exclusive = true })
}

// BenchmarkQueueEndClaims: parallel callers end the claims of one match each (a result's
// EndClaims, not durable), two players a match, among as many live claims as the run ends:
//
//	go test -run '^$' -bench QueueEndClaims -cpu 16 -benchtime 20000x -count 6 ./db/queuedb/
//
// with TEST_DATABASE_URL set. server-µs/end is the CPU the Postgres processes spent per end
// (dbtest.ServerCPU), client-µs/end this process's (the benchmark's callers included), WAL-B/end
// the WAL the server wrote per end (every database's: the server should run nothing else).
func BenchmarkQueueEndClaims(b *testing.B) {
	qs, s := openQueueStore(b)
	ctx := context.Background()
	now := time.Now()
	if _, err := s.Pool().Exec(ctx, `
INSERT INTO queue_claims (player_id, ticket_id, match_id, queue, until)
SELECT 'p' || g, 'tk' || g, 'mt' || g / 2, 'q', $1 FROM generate_series(0, 2 * $2::int + 1) AS g`,
		now.Add(time.Hour), b.N); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE queue_claims`); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	cpu0, self0, wal0 := dbtest.ServerCPU(s.Pool()), processCPU(b), dbtest.WALBytes(b, s.Pool())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m := fmt.Sprintf("mt%d", next.Add(1)-1)
			if ended, err := qs.EndClaims(ctx, m, now, false); err != nil || !ended {
				b.Errorf("EndClaims(%s): ended %v, %v", m, ended, err)
				return
			}
		}
	})
	b.StopTimer()
	cpu, self, wal := dbtest.ServerCPU(s.Pool())-cpu0, processCPU(b)-self0, dbtest.WALBytes(b, s.Pool())-wal0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "server-µs/end")
	b.ReportMetric(float64(self.Microseconds())/float64(b.N), "client-µs/end")
	b.ReportMetric(float64(wal)/float64(b.N), "WAL-B/end")
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
