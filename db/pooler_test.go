package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/pgfault"
)

// TestTransactionPooledFindsPgbouncersTransactionMode: the check, on a real pgbouncer in
// front of the test's database, finds its transaction mode and only that: not its session
// mode, not the database itself.
func TestTransactionPooledFindsPgbouncersTransactionMode(t *testing.T) {
	t.Parallel()
	direct := dbtest.URL(t)
	b := pgfault.StartPgbouncer(t, direct)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		name, url string
		want      bool
	}{
		{"direct", direct, false},
		{"pgbouncer session mode", b.SessionURL(), false},
		{"pgbouncer transaction mode", b.TransactionURL(), true},
	} {
		got, err := db.TransactionPooled(ctx, c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: TransactionPooled = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestConnectBehindATransactionPooler: Connect, looking for a pooler, refuses pgbouncer's
// transaction mode without a session URL, and as the session URL, before it migrates
// anything; with the session URL in session mode (or direct) it migrates there, and the pool
// through the transaction pooler runs queries, batches and transactions (no named prepared
// statements, which pgbouncer 1.18 does not keep).
func TestConnectBehindATransactionPooler(t *testing.T) {
	t.Parallel()
	direct := dbtest.URL(t)
	b := pgfault.StartPgbouncer(t, direct)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := db.Options{DetectPooler: true}
	refusals := []struct {
		name    string
		session string
		want    db.PoolerError
	}{
		{"no session URL", "", db.PoolerError{}},
		{"a pooled session URL", b.TransactionURL(), db.PoolerError{SessionURL: true}},
	}
	for _, c := range refusals {
		_, _, err := db.Connect(ctx, b.TransactionURL(), o, db.Startup{Migrate: true, SessionURL: c.session})
		var pe *db.PoolerError
		if !errors.As(err, &pe) || *pe != c.want {
			t.Errorf("%s: Connect = %v, want a %+v", c.name, err, c.want)
		}
	}
	if v := schemaVersion(ctx, t, direct); v != 0 {
		t.Fatalf("the refused starts migrated the database to %d", v)
	}

	for _, session := range []string{b.SessionURL(), direct} {
		d, n, err := db.Connect(ctx, b.TransactionURL(), o, db.Startup{Migrate: true, SessionURL: session})
		if err != nil {
			t.Fatalf("session URL %s: %v", session, err)
		}
		if !d.TransactionPooled() {
			t.Error("TransactionPooled = false through pgbouncer's transaction mode")
		}
		if session == b.SessionURL() && n == 0 {
			t.Error("nothing migrated through the session URL")
		}
		// Clients at once, each with several round trips, so that statements land on other
		// server sessions than the ones that described them.
		var wg sync.WaitGroup
		errs := make(chan error, db.DefaultMaxConns)
		for range db.DefaultMaxConns {
			wg.Go(func() { errs <- throughThePooler(ctx, d, 20) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("session URL %s: %v", session, err)
			}
		}
		d.Close()
	}
}

// throughThePooler runs a query, a batch and a transaction n times on the pool.
func throughThePooler(ctx context.Context, d *db.DB, n int) error {
	for i := range n {
		var got int
		if err := d.Pool().QueryRow(ctx, `SELECT count(*)::int + $1 FROM goose_db_version`, i).Scan(&got); err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
		batch := &pgx.Batch{}
		batch.Queue(`SELECT $1::int`, i)
		batch.Queue(`SELECT $1::text`, "x")
		if err := d.Pool().SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("batch %d: %w", i, err)
		}
		if err := pgx.BeginFunc(ctx, d.Pool(), func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT $1::int`, i)
			return err
		}); err != nil {
			return fmt.Errorf("transaction %d: %w", i, err)
		}
	}
	return nil
}

func schemaVersion(ctx context.Context, t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
