package queuedb_test

import (
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// queue_searching carries two indexes (migration 00022), where it carried three, each
// written for every player of every ticket created: its primary key (player_id, queue) and
// (queue, ticket_id). Every statement that finds its rows still finds them through one of
// the two, never by a scan, at 20,000 searching players in two queues with the generic plan
// forced: an ended ticket's delete and a creation's give-back (by queue and ticket), the
// ticks' lookup of a player's tickets elsewhere (by player), a deletion's lock of a queue's
// live tickets (by queue).
func TestQueueSearchingPlayersByTwoIndexes(t *testing.T) {
	t.Parallel()
	qs, d := openQueueStore(t)
	ctx := testCtx(t)
	pool := d.Pool()
	var indexes []string
	if err := pool.QueryRow(ctx, `SELECT array_agg(indexname::text ORDER BY indexname) FROM pg_indexes WHERE tablename = 'queue_searching'`).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if strings.Join(indexes, " ") != "queue_searching_pkey queue_searching_ticket" {
		t.Fatalf("queue_searching's indexes: %v, want its primary key and queue_searching_ticket", indexes)
	}
	mustPut(t, qs, queuetest.Queue("q"))
	mustPut(t, qs, queuetest.Queue("r"))
	for _, stmt := range []string{
		`INSERT INTO queue_searching (queue, player_id, ticket_id)
		 SELECT CASE WHEN g % 2 = 0 THEN 'q' ELSE 'r' END, 'p' || g, 't' || g FROM generate_series(1, 20000) AS g`,
		`ANALYZE queue_searching`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	conn := genericPlans(t, ctx, pool)
	for _, c := range []struct{ sig, sql, call string }{
		{"end_searching(text[], text[])", queuedb.SQLEndSearching, `end_searching('{q,r}', '{t2,t3}')`},
		{"return_claims(text[], text[])", queuedb.SQLReturnClaims, `return_claims('{q}', '{t2}')`},
		{"elsewhere(text[], text)", queuedb.SQLLockElsewhereTickets, `elsewhere('{p2,p3}', 'q')`},
		{"lock_live(text)", queuedb.SQLLockLive, `lock_live('q')`},
	} {
		if plan := planOf(t, ctx, conn, c.sig, c.sql, c.call); strings.Contains(plan, "Seq Scan on queue_searching") {
			t.Errorf("%s scans queue_searching:\n%s", c.sig, plan)
		}
	}
}
