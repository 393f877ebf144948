package queuedb_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// percentile returns the p-th percentile (0..1) of ds, in milliseconds.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))]) / float64(time.Millisecond)
}

// benchTicket is a solo ticket as a game backend sends it: an inline rating, latencies to
// three regions, an idempotency key.
func benchTicket(id string, at time.Time) queue.Ticket {
	return queue.Ticket{
		ID: id, Queue: "bench", Status: queue.Searching, CreatedAt: at, ExpiresAt: at.Add(5 * time.Minute),
		Players:        []queue.Player{{ID: "player-" + id, Rating: 1000, Source: queue.RatingInline}},
		Latencies:      map[string]float64{"eu-west": 31, "eu-central": 44.5, "us-east": 97},
		IdempotencyKey: "key-" + id, BodyHash: [32]byte{1, 2, 3},
	}
}

// BenchmarkQueueCreateTicket: parallel callers each create tickets one after the other, every
// ticket committed before its call returns (the store's group commit gathers them):
//
//	go test -run '^$' -bench QueueCreateTicket -cpu 1,16,64 -count 6 ./db/
//
// with TEST_DATABASE_URL set. tickets/s is the rate, tickets/commit how many tickets shared a
// commit, p50-ms and p99-ms a call's latency, server-µs/ticket the CPU the Postgres processes
// spent per ticket (0 when the server is not on this machine; see dbtest.ServerCPU), WAL-B/ticket
// the WAL the server wrote per ticket (every database's: the server should run nothing else).
func BenchmarkQueueCreateTicket(b *testing.B) {
	qs, s := openQueueStore(b)
	q := queue.DefaultQueue("bench")
	q.GameType = "ctf"
	if _, _, err := qs.PutQueue(context.Background(), q); err != nil {
		b.Fatal(err)
	}
	benchCreates(b, qs, s.Pool(), time.Now(), func(*queue.Ticket) {})
}

// benchCreates is the parallel creations of BenchmarkQueueCreateTicket in queue "bench",
// each ticket as benchTicket makes it at now and then as edit leaves it, with their metrics.
func benchCreates(b *testing.B, qs *queuedb.Store, pool *pgxpool.Pool, now time.Time, edit func(*queue.Ticket)) {
	ctx := context.Background()
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	commits0, tickets0 := qs.CreateStats()
	cpu0, wal0 := dbtest.ServerCPU(pool), dbtest.WALBytes(b, pool)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			tk := benchTicket(fmt.Sprintf("t%d", next.Add(1)), now)
			edit(&tk)
			t0 := time.Now()
			_, _, err := qs.CreateTicket(ctx, tk)
			mine = append(mine, time.Since(t0))
			if err != nil {
				b.Error(err)
				return
			}
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	commits, tickets := qs.CreateStats()
	cpu, wal := dbtest.ServerCPU(pool)-cpu0, dbtest.WALBytes(b, pool)-wal0
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tickets/s")
	b.ReportMetric(float64(tickets-tickets0)/float64(max(1, commits-commits0)), "tickets/commit")
	b.ReportMetric(percentile(lat, 0.5), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "server-µs/ticket")
	b.ReportMetric(float64(wal)/float64(b.N), "WAL-B/ticket")
}

// seedSearching inserts n searching solo tickets into a queue directly, as the store stores
// them, and returns them.
func seedSearching(tb testing.TB, pool *pgxpool.Pool, queueName, prefix string, n int, at time.Time) []queue.Ticket {
	tb.Helper()
	_, err := pool.Exec(context.Background(), `
WITH t AS (
    INSERT INTO queue_tickets (id, queue, status, players, latencies, created_at, expires_at, updated_at, changed_xid)
    SELECT $2::text || i, $1, 'searching',
           jsonb_build_array(jsonb_build_object('id', $2::text || 'p' || i, 'rating', 900 + i % 200, 'source', 'inline')),
           '{"eu-west": 31}', $3::timestamptz, $3::timestamptz + interval '5 minutes', $3::timestamptz, pg_current_xact_id()
    FROM generate_series(1, $4::int) AS i
    RETURNING id, players->0->>'id' AS player
)
INSERT INTO queue_searching (queue, player_id, ticket_id) SELECT $1, player, id FROM t`, queueName, prefix, at, n)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]queue.Ticket, n)
	for i := range n {
		id := fmt.Sprintf("%s%d", prefix, i+1)
		out[i] = queue.Ticket{ID: id, Queue: queueName, Players: []queue.Player{{ID: fmt.Sprintf("%sp%d", prefix, i+1), Rating: float64(900 + (i+1)%200)}}}
	}
	return out
}

// fiveVFiveMatch is a match of ten solo tickets, five a team, paired in order.
func fiveVFiveMatch(id string, ts []queue.Ticket, at time.Time) queue.Match {
	m := queue.Match{ID: id, CreatedAt: at, Region: "eu-west", Teams: make([]queue.MatchTeam, 2)}
	for i, t := range ts {
		team := &m.Teams[i%2]
		p := t.Players[0]
		team.Players = append(team.Players, queue.MatchPlayer{ID: p.ID, TicketID: t.ID, Rating: p.Rating})
		team.RatingTotal += p.Rating
	}
	for i := range 5 {
		a, b := m.Teams[0].Players[i], m.Teams[1].Players[i]
		m.Pairs = append(m.Pairs, queue.Pair{Players: [2]string{a.ID, b.ID}, Difference: max(a.Rating-b.Rating, b.Rating-a.Rating), Interval: 50})
	}
	m.SkillDifference = max(m.Teams[0].RatingTotal-m.Teams[1].RatingTotal, m.Teams[1].RatingTotal-m.Teams[0].RatingTotal)
	m.AverageDifference = m.SkillDifference / 5
	return m
}

// BenchmarkQueueCommitTick: one tick's write of 1,000 5v5 matches of solo tickets (10,000
// tickets matched, 10,000 events), in a queue that has them and 10,000 more searching:
//
//	go test -run '^$' -bench QueueCommitTick -benchtime 5x -count 6 ./db/
func BenchmarkQueueCommitTick(b *testing.B) {
	const matches = 1000
	qs, s := openQueueStore(b)
	ctx := context.Background()
	q := queue.DefaultQueue("bench")
	q.GameType = "ctf"
	if _, _, err := qs.PutQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	at := queuetest.T0
	seedSearching(b, s.Pool(), "bench", "other", 10*matches, at)
	var cpu time.Duration
	var wal int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ts := seedSearching(b, s.Pool(), "bench", fmt.Sprintf("i%d-", i), 10*matches, at)
		w := queue.TickWrite{At: at.Add(time.Minute)}
		for m := range matches {
			w.Matches = append(w.Matches, fiveVFiveMatch(fmt.Sprintf("m%d-%d", i, m), ts[10*m:10*m+10], w.At))
		}
		cpu0, wal0 := dbtest.ServerCPU(s.Pool()), dbtest.WALBytes(b, s.Pool())
		b.StartTimer()
		done, err := queue.CommitTick(ctx, qs, "bench", w)
		b.StopTimer()
		cpu += dbtest.ServerCPU(s.Pool()) - cpu0
		wal += dbtest.WALBytes(b, s.Pool()) - wal0
		if err != nil || len(done.Matches) != matches {
			b.Fatalf("%d matches stored, %v", len(done.Matches), err)
		}
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "server-ms/tick")
	b.ReportMetric(float64(wal)/float64(b.N)/(1<<20), "WAL-MiB/tick")
}

// BenchmarkQueueWake: a waiter on one replica, an event committed by another. call-ms is the
// CancelTicket call that writes the event (its commit included); wake-ms is from the start of
// that call to the waiter's return, so wake-ms minus call-ms is the notification's delay:
//
//	go test -run '^$' -bench QueueWake -benchtime 200x -count 6 ./db/
func BenchmarkQueueWake(b *testing.B) {
	stores, _ := openReplicas(b, 2)
	writer, reader := stores[0], stores[1]
	ctx := context.Background()
	q := queue.DefaultQueue("bench")
	q.GameType = "ctf"
	if _, _, err := writer.PutQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	var calls, wakes, delays []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		id := fmt.Sprintf("t%d", i)
		if _, _, err := writer.CreateTicket(ctx, benchTicket(id, queuetest.T0)); err != nil {
			b.Fatal(err)
		}
		woke := make(chan time.Time, 1)
		go func() {
			if err := reader.WaitEvents(ctx, "bench", int64(i)); err != nil {
				b.Error(err)
			}
			woke <- time.Now()
		}()
		for reader.Waiters("bench") == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := queue.CancelTicket(ctx, writer, id, queuetest.T0); err != nil {
			b.Fatal(err)
		}
		returned := time.Now()
		at := <-woke
		b.StopTimer()
		calls, wakes = append(calls, returned.Sub(start)), append(wakes, at.Sub(start))
		delays = append(delays, max(0, at.Sub(returned)))
	}
	b.ReportMetric(percentile(calls, 0.5), "call-p50-ms")
	b.ReportMetric(percentile(wakes, 0.5), "wake-p50-ms")
	b.ReportMetric(percentile(wakes, 0.99), "wake-p99-ms")
	b.ReportMetric(percentile(delays, 0.99), "after-return-p99-ms")
}
