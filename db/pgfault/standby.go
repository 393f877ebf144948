package pgfault

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replicated is a primary and a synchronous streaming standby of it, each a Server of the
// test's own: every COMMIT the primary acknowledges has been flushed by the standby first
// (synchronous_commit on, synchronous_standby_names '*'), so a write acknowledged before the
// primary dies is on the standby when it is promoted.
type Replicated struct {
	Primary, Standby *Server
}

// StartReplicated starts a primary (Start), copies it into a standby with pg_basebackup -R
// (which writes standby.signal and the primary_conninfo to stream from), starts the standby,
// and waits until the primary reports it synchronous. Both are stopped and removed when the
// test ends.
//
// The standby does not inherit synchronous_standby_names, set on the primary after the copy:
// once promoted it commits alone, as a failover manager (pg_auto_failover, Patroni) lets the
// new primary do while it has no standby of its own, rather than wait for one forever.
func StartReplicated(tb testing.TB) *Replicated {
	tb.Helper()
	primary := Start(tb)
	standby := newServer(tb)
	standby.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "postgres",
		"-D", standby.data(), "-R", "-X", "stream", "-c", "fast", "--no-sync")
	standby.Start()
	primary.Exec("ALTER SYSTEM SET synchronous_standby_names = '*'")
	primary.Exec("SELECT pg_reload_conf()")
	r := &Replicated{Primary: primary, Standby: standby}
	r.awaitSync()
	return r
}

// URL is the connection URL that lists both servers, primary first, and asks for the one
// that takes writes (target_session_attrs=read-write): a client connects to the standby only
// once it has been promoted.
func (r *Replicated) URL() string {
	return fmt.Sprintf("postgres://postgres@%s,%s/postgres?sslmode=disable&target_session_attrs=read-write",
		r.Primary.Addr(), r.Standby.Addr())
}

// Promote makes the standby a primary (pg_ctl promote) and waits until it takes writes.
func (r *Replicated) Promote() {
	r.Standby.tb.Helper()
	r.Standby.run("pg_ctl", "-D", r.Standby.data(), "-w", "-t", "60", "promote")
}

// awaitSync waits until the primary has a synchronous standby streaming from it.
func (r *Replicated) awaitSync() {
	tb := r.Primary.tb
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := r.Primary.query("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'", &n)
		if err == nil && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pgfault: the standby did not become synchronous within 30 s (%v)\n%s", err, r.Standby.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// query runs one query on the postgres database and scans its one row into dest.
func (s *Server) query(sql string, dest ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dest...)
}
