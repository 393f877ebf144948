package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// Every replica runs AnalyzeGrown on the same tables every few seconds: while one replica's
// round is under way another's analyzes nothing, and the next round after it finds the
// statistics made (two replicas used to analyze each grown table twice).
func TestAnalyzeGrownOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := db.Open(ctx, dbtest.URL(t), db.Options{MaxConns: dbtest.MaxConns})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pool := d.Pool()
	for _, stmt := range []string{
		`CREATE TABLE grown (id int)`,
		`INSERT INTO grown SELECT g FROM generate_series(1, 2000) AS g`,
		`SELECT pg_stat_force_next_flush()`, // the live rows counted at once, not within a second
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	analyses := func() (n int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'grown'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	other, err := pool.Begin(ctx) // another replica's round, under way
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback(context.Background()) }() // before the pool's close, on a failure
	var taken bool
	if err := other.QueryRow(ctx, db.SQLTryAnalyzeRound).Scan(&taken); err != nil || !taken {
		t.Fatalf("the other round's claim = %v, %v", taken, err)
	}
	if got, err := db.AnalyzeGrown(ctx, pool, db.GrownTableRows); err != nil || len(got) > 0 {
		t.Fatalf("AnalyzeGrown beside another round = %v, %v; want nothing analyzed", got, err)
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := analyses(); n != 0 {
		t.Fatalf("grown analyzed %d times beside another round; want 0", n)
	}
	if got, err := db.AnalyzeGrown(ctx, pool, db.GrownTableRows); err != nil || len(got) != 1 {
		t.Fatalf("AnalyzeGrown once the other round ended = %v, %v; want the grown table", got, err)
	}
	if got, err := db.AnalyzeGrown(ctx, pool, db.GrownTableRows); err != nil || len(got) > 0 {
		t.Fatalf("AnalyzeGrown again = %v, %v; want nothing: the statistics are fresh", got, err)
	}
	if n := analyses(); n != 1 {
		t.Fatalf("grown analyzed %d times; want 1", n)
	}
}
