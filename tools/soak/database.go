package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// database is the replicas' database, and the soak's one connection to it (for sampling and
// the checks at the end).
type database struct {
	url     string // the replicas' DATABASE_URL
	name    string
	fresh   bool   // created by the soak: dropped at the end
	server  string // with fresh: the URL it was created through
	private bool   // no one else's work shows in its statistics (a fresh database)

	mu   sync.Mutex
	conn *pgx.Conn
}

// checkLocalDatabase refuses a database that is not on this machine: the soak loads only
// loopback.
func checkLocalDatabase(s string) error {
	cfg, err := pgx.ParseConfig(s)
	if err != nil {
		return fmt.Errorf("%w: the database URL: %v", errUsage, err)
	}
	hosts := []string{cfg.Host}
	for _, f := range cfg.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	for _, h := range hosts {
		if strings.HasPrefix(h, "/") || h == "localhost" {
			continue // a Unix socket, or this machine
		}
		if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
			continue
		}
		return fmt.Errorf("%w: the database host %q is not this machine: the soak only loads loopback", errUsage, h)
	}
	return nil
}

// openDatabase creates a fresh database on c.serverURL, or takes c.databaseURL as it is,
// and connects to it.
func openDatabase(ctx context.Context, c config, logf func(string, ...any)) (*database, error) {
	d := &database{url: c.databaseURL}
	if c.serverURL != "" {
		d.name = "soak_" + randomHex(4)
		d.server, d.fresh, d.private = c.serverURL, true, true
		if err := adminExec(ctx, c.serverURL, "CREATE DATABASE "+pgx.Identifier{d.name}.Sanitize()); err != nil {
			return nil, fmt.Errorf("create database %s: %w", d.name, err)
		}
		logf("created database %s", d.name)
		u, err := withDatabase(c.serverURL, d.name)
		if err != nil {
			d.close()
			return nil, err
		}
		d.url = u
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, d.url)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("connect to the database: %w", err)
	}
	d.conn = conn
	if err := conn.QueryRow(cctx, "SELECT current_database()").Scan(&d.name); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// close closes the connection and drops a fresh database.
func (d *database) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d.mu.Lock()
	if d.conn != nil {
		_ = d.conn.Close(ctx)
		d.conn = nil
	}
	d.mu.Unlock()
	if d.fresh {
		_ = adminExec(ctx, d.server, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.name}.Sanitize()+" WITH (FORCE)")
	}
}

func adminExec(ctx context.Context, server, stmt string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}

// withDatabase is the connection string s (a URL or key=value pairs) pointed at the database
// name on the same server.
func withDatabase(s, name string) (string, error) {
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return s + " dbname=" + name, nil // later keys win
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("the server URL: %w", err)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}

// dbSample is one reading of the database's statistics; -1 where it failed.
type dbSample struct {
	Connections  int64 `json:"connections"`  // sessions on the database, the soak's own excluded
	Transactions int64 `json:"transactions"` // xact_commit + xact_rollback since the statistics' reset
	Commits      int64 `json:"commits"`
	// CPU is the user + system seconds so far of the server processes serving the database
	// (its backends, read from /proc; -1 when the server runs elsewhere). The server's
	// background processes (WAL writer, checkpointer) are left out: other databases of a
	// shared server use them too.
	CPU float64 `json:"cpu_s"`
}

func (d *database) sample(ctx context.Context) dbSample {
	s := dbSample{Connections: -1, Transactions: -1, Commits: -1, CPU: -1}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil {
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := d.conn.QueryRow(ctx, `
SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()),
       xact_commit + xact_rollback, xact_commit
FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.Connections, &s.Transactions, &s.Commits)
	if err != nil {
		return dbSample{Connections: -1, Transactions: -1, Commits: -1, CPU: -1}
	}
	s.CPU = d.backendsCPU(ctx)
	return s
}

// backendsCPU is the CPU seconds of the database's backends, the soak's own included (it
// is idle but for these samples), or -1.
func (d *database) backendsCPU(ctx context.Context) float64 {
	rows, err := d.conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return -1
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return -1
	}
	total, read := 0.0, false
	for _, pid := range pids {
		if cpu := readCPU(int(pid)); cpu >= 0 {
			total, read = total+cpu, true
		}
	}
	if !read {
		return -1
	}
	return total
}

// storedTicket is a ticket of the queue found in the database by its first player.
type storedTicket struct {
	Player string `json:"player"`
	ID     string `json:"id"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// ticketsOf finds the queue's tickets whose first player is one of players.
func (d *database) ticketsOf(ctx context.Context, queue string, players []string) ([]storedTicket, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rows, err := d.conn.Query(ctx, `
SELECT players->0->>'id', id, status, reason FROM queue_tickets
WHERE queue = $1 AND players->0->>'id' = ANY($2::text[])`, queue, players)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (storedTicket, error) {
		var t storedTicket
		err := r.Scan(&t.Player, &t.ID, &t.Status, &t.Reason)
		return t, err
	})
}

// queueCounts is the queue's tickets by status (and reason) and its matches, as stored.
func (d *database) queueCounts(ctx context.Context, queue string) (map[string]int64, int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rows, err := d.conn.Query(ctx, `
SELECT status || CASE WHEN reason <> '' THEN ' (' || reason || ')' ELSE '' END, count(*)
FROM queue_tickets WHERE queue = $1 GROUP BY 1`, queue)
	if err != nil {
		return nil, 0, err
	}
	counts := map[string]int64{}
	var k string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&k, &n}, func() error { counts[k] = n; return nil }); err != nil {
		return nil, 0, err
	}
	var matches int64
	err = d.conn.QueryRow(ctx, `SELECT count(*) FROM queue_matches WHERE queue = $1`, queue).Scan(&matches)
	return counts, matches, err
}
