package queuedb_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// A purge at production size: an hour of 30 events a second and the tickets and matches
// behind them. Deleting it all as one statement per table never finished (the planner walked
// every queue's events once per event); in chunks it takes seconds, within a deadline.
func TestQueuePurgeAtScale(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: 120,000 events")
	}
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	const oldEvents, newEvents, oldTickets, oldMatches = 120_000, 10, 60_000, 30_000
	old, before, recent := queuetest.T0, queuetest.T0.Add(time.Hour), queuetest.T0.Add(2*time.Hour)
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO queue_events (queue, seq, type, ticket_id, at)
		  SELECT 'q', g, 'cancelled', 'e' || g::text, CASE WHEN g <= $1::int THEN $3::timestamptz ELSE $4 END
		  FROM generate_series(1, $1::int + $2::int) AS g`, []any{oldEvents, newEvents, old, recent}},
		{`UPDATE queues SET event_seq = $1 WHERE name = 'q'`, []any{oldEvents + newEvents}},
		{`INSERT INTO queue_tickets (id, queue, status, players, created_at, expires_at, updated_at, changed_xid)
		  SELECT 't' || g::text, 'q', 'cancelled', '[]', $2, $2, $2, pg_current_xact_id()
		  FROM generate_series(1, $1::int) AS g`, []any{oldTickets, old}},
		{`INSERT INTO queue_matches (id, queue, created_at, region, teams, pairs, skill_difference, average_difference)
		  SELECT 'm' || g::text, 'q', $2, '', '[]', '[]', 0, 0 FROM generate_series(1, $1::int) AS g`, []any{oldMatches, old}},
	} {
		if _, err := s.Pool().Exec(ctx, stmt.sql, stmt.args...); err != nil {
			t.Fatal(err)
		}
	}

	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	r, err := qs.Purge(pctx, before)
	if err != nil {
		t.Fatalf("purge after %v: %v (deleted %+v)", time.Since(start), err, r)
	}
	t.Logf("purged %+v in %v", r, time.Since(start))
	if r.Events != oldEvents || r.Tickets != oldTickets || r.Matches != oldMatches {
		t.Fatalf("purged %+v, want %d events, %d tickets, %d matches", r, oldEvents, oldTickets, oldMatches)
	}
	evs, err := eventsOf(qs.Events(ctx, "q", 0, 100, false))
	if err != nil || len(evs) != newEvents || evs[0].Seq != oldEvents+1 {
		t.Fatalf("events kept: %d from seq %v (%v); want the %d recent ones", len(evs), evs, err, newEvents)
	}
}

// While another process purges (it holds the purge lock), a purge does nothing and says so
// without waiting; once the lock is free it purges.
func TestQueuePurgeOneProcessAtATime(t *testing.T) {
	t.Parallel()
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	mustCreate(t, qs, queuetest.Ticket("q", "old", 1, "alice"))
	if _, err := queue.CancelTicket(ctx, qs, "old", queuetest.T0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	other, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `SELECT pg_advisory_lock(4, 0)`); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if r, err := qs.Purge(pctx, queuetest.T0.Add(time.Hour)); err != nil || r.Tickets+r.Events != 0 {
		t.Fatalf("purge beside another process's: %+v, %v; want nothing done and no error", r, err)
	}
	if _, err := other.Exec(ctx, `SELECT pg_advisory_unlock(4, 0)`); err != nil {
		t.Fatal(err)
	}
	other.Release()
	if r, err := qs.Purge(ctx, queuetest.T0.Add(time.Hour)); err != nil || r.Tickets != 1 || r.Events != 1 {
		t.Fatalf("purge once the lock is free: %+v, %v; want the ticket and its event", r, err)
	}
}

// The queue's own work does not wait for the pool that clients' reads use: with every one of
// the pool's connections held (as thousands of long-polls held them), a ticket is still
// created, the leader still loads and commits its tick, and the purge still runs.
func TestQueueWorkIsNotStarvedByTheClientsPool(t *testing.T) {
	t.Parallel()
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	for range s.Pool().Config().MaxConns {
		c, err := s.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	x := mustCreate(t, qs, queuetest.Ticket("q", "x", 1, "x1", "x2"))
	y := mustCreate(t, qs, queuetest.Ticket("q", "y", 2, "y1", "y2"))
	if _, _, err := qs.Changes(wctx, queue.Queue{Name: "q"}, "", 0); err != nil {
		t.Fatalf("the leader's load with the pool taken: %v", err)
	}
	w := queue.TickWrite{At: queuetest.T0, Matches: []queue.Match{queuetest.Match2v2("m", x, y)}}
	if done, err := queue.CommitTick(wctx, qs, "q", w); err != nil || len(done.Matches) != 1 {
		t.Fatalf("the tick's commit with the pool taken: %+v %v", done, err)
	}
	if _, err := qs.Purge(wctx, queuetest.T0); err != nil {
		t.Fatalf("the purge with the pool taken: %v", err)
	}
}
