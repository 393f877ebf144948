package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/pgfault"
)

// TestRunBehindPgbouncer: the program with DATABASE_URL through a real pgbouncer in
// transaction mode. Without DATABASE_SESSION_URL, and with one through the same transaction
// mode, it refuses to start, naming the variable to change, and migrates nothing; with
// DATABASE_SESSION_URL through pgbouncer in session mode it leads a queue, wakes a long-poll
// and makes a match (the queue round trip of the client).
func TestRunBehindPgbouncer(t *testing.T) {
	t.Parallel()
	direct := dbtest.URL(t)
	b := pgfault.StartPgbouncer(t, direct)
	for _, c := range []struct {
		name, session, want string
	}{
		{"no session URL", "", "DATABASE_URL goes through a pooler in transaction mode"},
		{"a pooled session URL", b.TransactionURL(), "DATABASE_SESSION_URL goes through a pooler in transaction mode"},
	} {
		env := map[string]string{"DATABASE_URL": b.TransactionURL(), "DATABASE_SESSION_URL": c.session,
			"MATCHMAKER_AUTH": "off", "MATCHMAKER_ADDR": "127.0.0.1:0"}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := run(ctx, []string{"api"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: run = %v, want an error saying %q", c.name, err, c.want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var migrated bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&migrated); err != nil || migrated {
		t.Fatalf("the refused starts migrated the database (%v, %v)", migrated, err)
	}

	p := startProgram(t, map[string]string{"DATABASE_URL": b.TransactionURL(),
		"DATABASE_SESSION_URL": b.SessionURL() + "&application_name=mm-session", "MATCHMAKER_AUTH": "off"})
	defer p.stop()
	queueRoundTrip(t, p.base)
	// The queue's lock and the LISTEN are held by sessions of the session URL, seen from the
	// database itself.
	var holders, listeners []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(a.application_name), '{}') FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid)
		WHERE l.locktype = 'advisory' AND l.classid = 3 AND l.granted
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&holders); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(application_name), '{}') FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&listeners); err != nil {
		t.Fatal(err)
	}
	if len(holders) == 0 || len(listeners) != 1 || listeners[0] != "mm-session" || slices.ContainsFunc(holders, func(a string) bool { return a != "mm-session" }) {
		t.Errorf("leadership held by sessions %q and LISTEN by %q, want the session URL's (mm-session)", holders, listeners)
	}
}
