package queuedb_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// A replica reads each tick's events (a few hundred) with their tickets and owners while
// the queue keeps an hour of tickets: the reads must look each ticket up by its key, never
// scan them all. As a join it was planned as a hash join over every kept ticket once the
// statement's plan was the generic one (33 ms at 18,000 tickets in the soak, growing with
// the retention); the plan is checked with the generic plan forced.
func TestQueueEventReadsLookTicketsUp(t *testing.T) {
	t.Parallel()
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	const tickets = 20_000
	for _, stmt := range []string{
		`INSERT INTO queue_tickets (id, queue, status, players, created_at, expires_at, updated_at, changed_xid)
		 SELECT 't' || g::text, 'q', 'cancelled', '[]', now(), now(), now(), pg_current_xact_id()
		 FROM generate_series(1, 20000) AS g`,
		`INSERT INTO queue_events (queue, seq, type, ticket_id, at)
		 SELECT 'q', g, 'cancelled', 't' || g::text, now() FROM generate_series(1, 20000) AS g`,
		`UPDATE queues SET event_seq = 20000 WHERE name = 'q'`,
		`ANALYZE queue_tickets`,
		`ANALYZE queue_events`,
	} {
		if _, err := s.Pool().Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	conn := genericPlans(t, ctx, s.Pool())
	for name, sql := range map[string]string{"events": queuedb.SQLEvents, "event_tickets": queuedb.SQLEventTickets} {
		plan := planOf(t, ctx, conn, name+"(text, bigint, int)", sql, fmt.Sprintf(`%s('q', %d, 1000)`, name, tickets-300))
		if strings.Contains(plan, "Seq Scan on queue_tickets") {
			t.Fatalf("the %s read scans the tickets:\n%s", name, plan)
		}
	}
	page, err := qs.Events(ctx, "q", tickets-300, 1000, true)
	if evs, tks := page.Events, page.Tickets; err != nil || len(evs) != 300 || len(tks) != 300 {
		t.Fatalf("Events with tickets = %d events, %d tickets, %v; want 300 of each", len(evs), len(tks), err)
	}
}
