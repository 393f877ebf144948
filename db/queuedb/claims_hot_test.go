package queuedb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// writeClaims writes n matches' claims of two players each (match mt<i>, players p<2i> and
// p<2i+1>) as a tick writes them, held until until.
func writeClaims(t *testing.T, pool *pgxpool.Pool, n int, until time.Time) {
	t.Helper()
	var players, tickets, matches, queues []string
	var untils []pgtype.Timestamptz
	for i := range 2 * n {
		players, tickets = append(players, fmt.Sprintf("p%d", i)), append(tickets, fmt.Sprintf("tk%d", i))
		matches, queues = append(matches, fmt.Sprintf("mt%d", i/2)), append(queues, "q")
		untils = append(untils, pgtype.Timestamptz{Time: until, Valid: true})
	}
	if _, err := pool.Exec(testCtx(t), queuedb.SQLWriteClaims, players, tickets, matches, queues, untils); err != nil {
		t.Fatal(err)
	}
}

// A result's end of its claims is a heap-only update: it changes no indexed column, and the
// claim's page has room for the new version, so no index entry is written (it wrote one in
// each of the table's three). 2,000 claims written as a tick writes them, all ended in one
// transaction (so that no old version can be pruned to make room: the room is the
// fillfactor's); the transaction's own counts of updates. Before the migration 00021, until
// was indexed: no end was heap-only; with the index gone but the pages filled, 1 of 2,000.
func TestQueueClaimEndsAreHeapOnly(t *testing.T) {
	t.Parallel()
	_, d := openQueueStore(t)
	ctx := testCtx(t)
	const n = 1000
	writeClaims(t, d.Pool(), n, queuetest.T0.Add(time.Hour))
	var matches []string
	var at []pgtype.Timestamptz
	for i := range n {
		matches, at = append(matches, fmt.Sprintf("mt%d", i)), append(at, pgtype.Timestamptz{Time: queuetest.T0.Add(time.Second), Valid: true})
	}
	tx, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	tag, err := tx.Exec(ctx, queuedb.SQLEndClaims, matches, at)
	if err != nil || tag.RowsAffected() != 2*n {
		t.Fatalf("the ends: %v, %v; want %d claims ended", tag, err, 2*n)
	}
	var updates, hot int64
	if err := tx.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = 'queue_claims'`).Scan(&updates, &hot); err != nil {
		t.Fatal(err)
	}
	if updates != 2*n || hot < updates*95/100 {
		t.Fatalf("%d of %d claims' ends were heap-only updates; want at least 95%% of %d", hot, updates, 2*n)
	}
}

// The purge deletes a claim once its until has passed, found by the until it was made with
// (purge_after): an ended claim's row stays until then, and a claim stored before the
// migration 00021 (purge_after -infinity) stays while it is live.
func TestQueuePurgeDeletesClaimsOnceOver(t *testing.T) {
	t.Parallel()
	qs, d := openQueueStore(t)
	ctx := testCtx(t)
	pool := d.Pool()
	until := queuetest.T0.Add(time.Hour)
	writeClaims(t, pool, 2, until) // mt0 ended at once below, mt1 live
	if _, err := pool.Exec(ctx, `INSERT INTO queue_claims (player_id, ticket_id, match_id, queue, until) VALUES ('old', 'tk-old', 'mt-old', 'q', $1)`, until); err != nil {
		t.Fatal(err)
	}
	if ended, err := qs.EndClaims(ctx, "mt0", queuetest.T0.Add(time.Second), true); err != nil || !ended {
		t.Fatalf("EndClaims(mt0): %v, %v", ended, err)
	}
	left := func() []string {
		t.Helper()
		rows, _ := pool.Query(ctx, `SELECT player_id FROM queue_claims ORDER BY player_id`)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	for _, c := range []struct {
		before time.Time
		want   string
	}{
		{queuetest.T0.Add(time.Minute), "[old p0 p1 p2 p3]"},
		{until.Add(time.Second), "[]"},
	} {
		if _, err := qs.Purge(ctx, c.before); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(left()); got != c.want {
			t.Fatalf("claims left after a purge before %v: %s, want %s", c.before, got, c.want)
		}
	}
}
