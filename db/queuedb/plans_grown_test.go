package queuedb_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/queuedb"
)

// A fresh database's tables grow from nothing faster than autovacuum first analyzes them,
// and a connection keeps the generic plan it made of a statement while they were tiny: in
// the throughput soak the tick's claims read and each result's EndClaims scanned every
// ticket and claim for the first 30-40 s. db.AnalyzeGrown (which the store runs every few
// seconds) analyzes the tables that outgrew their statistics, and the plans are made again
// from the new ones.
func TestGrownTablesArePlannedAgain(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx := testCtx(t)
	pool := d.Pool()
	conn := genericPlans(t, ctx, pool) // the plans a connection keeps after five executions
	// grow adds tickets and claims from..to on conn, and has its counts of live rows sent to
	// the statistics at once (a backend sends them when idle, at most once a second).
	grow := func(from, to int) {
		t.Helper()
		for _, stmt := range []string{
			`INSERT INTO queue_tickets (id, queue, status, players, created_at, expires_at, updated_at, assignment, changed_xid)
			 SELECT 'tk' || g, 'q', 'matched', '[]', now(), now(), now(), '{"match_id": "m", "team": 0}', pg_current_xact_id()
			 FROM generate_series($1::int, $2::int) AS g`,
			`INSERT INTO queue_claims (player_id, ticket_id, match_id, queue, until)
			 SELECT 'p' || g, 'tk' || g, 'mt' || g / 2, 'q', now() + interval '1 hour' FROM generate_series($1::int, $2::int) AS g`,
		} {
			if _, err := conn.Exec(ctx, stmt, from, to); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
	}
	grow(1, 10)
	if _, err := conn.Exec(ctx, `ANALYZE queue_tickets, queue_claims`); err != nil {
		t.Fatal(err)
	}
	// The plans, made now, at ten rows.
	statements := map[string]string{
		"end_claims(text[], timestamptz[])": queuedb.SQLEndClaims,
		"read_claims(text[])":               queuedb.SQLReadClaims,
	}
	calls := map[string]string{"end_claims": `end_claims('{mt7}', ARRAY[now()])`, "read_claims": `read_claims('{p1,p2,p3}')`}
	for sig, sql := range statements {
		if _, err := conn.Exec(ctx, `PREPARE `+sig+` AS `+sql); err != nil {
			t.Fatal(err)
		}
	}
	for _, call := range calls {
		explain(t, ctx, conn, call) // planned and kept
	}
	grow(11, 20_000)
	scans := func() []string {
		t.Helper()
		var found []string
		for name, call := range calls {
			if plan := explain(t, ctx, conn, call); strings.Contains(plan, "Seq Scan") {
				found = append(found, name+":\n"+plan)
			}
		}
		return found
	}
	if s := scans(); len(s) != len(calls) {
		t.Fatalf("the plans made at ten rows should scan; %d of %d do: %v", len(s), len(calls), s)
	}
	analyzed, err := db.AnalyzeGrown(ctx, pool, db.GrownTableRows)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"queue_claims", "queue_tickets"} {
		if !slices.ContainsFunc(analyzed, func(s string) bool { return strings.HasSuffix(s, "."+want) }) {
			t.Errorf("AnalyzeGrown analyzed %v, not %s", analyzed, want)
		}
	}
	if s := scans(); len(s) > 0 {
		t.Fatalf("after AnalyzeGrown the statements still scan:\n%s", strings.Join(s, "\n"))
	}
	if again, err := db.AnalyzeGrown(ctx, pool, db.GrownTableRows); err != nil || len(again) > 0 {
		t.Fatalf("AnalyzeGrown again = %v, %v; want nothing: no table grew since", again, err)
	}
}

// genericPlans is a connection of pool whose statements are planned with the generic plan
// (the plan a connection keeps after five executions of a prepared statement), released at
// the test's end.
func genericPlans(t *testing.T, ctx context.Context, pool *pgxpool.Pool) *pgxpool.Conn {
	t.Helper()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), `RESET plan_cache_mode`) })
	return conn
}

// planOf is the plan of sql prepared as sig (`name(types)`) and executed as call on conn.
func planOf(t *testing.T, ctx context.Context, conn *pgxpool.Conn, sig, sql, call string) string {
	t.Helper()
	if _, err := conn.Exec(ctx, `PREPARE `+sig+` AS `+sql); err != nil {
		t.Fatal(err)
	}
	plan := explain(t, ctx, conn, call)
	if _, err := conn.Exec(ctx, `DEALLOCATE `+sig[:strings.IndexByte(sig, '(')]); err != nil {
		t.Fatal(err)
	}
	return plan
}

// explain is the plan of EXECUTE call on conn.
func explain(t *testing.T, ctx context.Context, conn *pgxpool.Conn, call string) string {
	t.Helper()
	rows, err := conn.Query(ctx, `EXPLAIN EXECUTE `+call)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// The wide jsonb columns no statement filters by have no statistics (migration 00018): an
// ANALYZE spent most of its time on them (docs/performance.md, "The throughput table"),
// while the columns the statements filter by keep theirs.
func TestAnalyzeSkipsTheWideColumns(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx := testCtx(t)
	pool := d.Pool()
	for _, stmt := range []string{
		`INSERT INTO queue_tickets (id, queue, status, players, created_at, expires_at, updated_at, assignment, changed_xid)
		 SELECT 'tk' || g, 'q', 'matched', jsonb_build_array(jsonb_build_object('id', 'p' || g, 'rating', g)), now(), now(), now(),
		        jsonb_build_object('match_id', 'm' || g / 2, 'team', g % 2), pg_current_xact_id()
		 FROM generate_series(1, 2000) AS g`,
		`INSERT INTO queue_matches (id, queue, created_at, region, teams, pairs, skill_difference, average_difference)
		 SELECT 'm' || g, 'q', now(), 'eu', jsonb_build_array(jsonb_build_array('p' || g), jsonb_build_array('p' || g + 1)),
		        jsonb_build_array(jsonb_build_object('a', 'p' || g, 'b', 'p' || g + 1)), 1, 1
		 FROM generate_series(1, 2000) AS g`,
		`ANALYZE queue_tickets, queue_matches`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := pool.Query(ctx, `SELECT tablename || '.' || attname FROM pg_stats
WHERE schemaname = current_schema() AND tablename IN ('queue_tickets', 'queue_matches') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	analyzed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"queue_tickets.players", "queue_tickets.assignment", "queue_matches.teams", "queue_matches.pairs"} {
		if slices.Contains(analyzed, c) {
			t.Errorf("%s has statistics; want none (migration 00018)", c)
		}
	}
	for _, c := range []string{"queue_tickets.id", "queue_tickets.queue", "queue_tickets.status", "queue_matches.id", "queue_matches.created_at"} {
		if !slices.Contains(analyzed, c) {
			t.Errorf("%s has no statistics; the statements filter by it (analyzed: %v)", c, analyzed)
		}
	}
}
