package db

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// A pooler in transaction mode (pgbouncer's pool_mode=transaction, and the poolers managed
// Postgres offers in front of a database) hands each transaction, and each statement outside
// one, to whichever server session is free. Transactions do not notice; what lives in a
// session does: a session advisory lock (a queue's leadership, the purge's turn, the
// migrations' lock) is taken on one server session and released, or never, on another;
// LISTEN hears nothing once its session serves someone else; a named prepared statement
// (pgx's default, cache_statement) is missing on the next session (pgbouncer keeps them for
// its clients from 1.21 on, with max_prepared_statements set).
//
// So the service takes two URLs: the pool's, which may go through such a pooler, and a
// session URL (direct, or a pooler in session mode) for what needs a session. Open, asked
// to (Options.DetectPooler), finds a transaction pooler in front of its URL and then runs
// the pool's queries without named prepared statements (cache_describe: the statement is
// parsed again each time, on whichever session, from a description pgx keeps) unless the
// URL names a default_query_exec_mode; Connect refuses a pooled URL with no session URL,
// and a session URL that is pooled too.

// PoolerError is Connect's refusal of a URL behind a pooler in transaction mode where a
// session is needed: the pool's URL without a session URL (SessionURL false), or the session
// URL itself (SessionURL true).
type PoolerError struct {
	SessionURL bool
}

func (e *PoolerError) Error() string {
	if e.SessionURL {
		return "db: the session URL goes through a pooler in transaction mode: it must reach the database directly or through a pooler in session mode " +
			"(leadership's advisory locks, LISTEN and the migrations' lock live in a session)"
	}
	return "db: the database URL goes through a pooler in transaction mode: leadership's advisory locks, LISTEN and the migrations' lock need a session; " +
		"give a session URL too (direct, or a pooler in session mode)"
}

// poolerProbes is how many other clients' transactions the check holds open while it looks
// for its first session's server process among theirs.
const poolerProbes = 3

const sqlBackendPID = `SELECT pg_backend_pid()`

// TransactionPooled reports whether the server at url hands one client's statements to
// different server sessions: a pooler in transaction (or statement) mode. It opens a client
// connection and reads its server process; then, up to poolerProbes times, another client
// opens a transaction and reads its own, while the first reads its again. Behind a pooler in
// transaction mode one of the others is given the first's server process (pgbouncer gives
// the one freed last) or the first is given another; directly, or behind a pooler in session
// mode, a client's server process is its own for as long as it is connected. A pooler that
// hands out its sessions in another order could escape the check: it is best effort, and
// what it finds is certain.
func TransactionPooled(ctx context.Context, url string) (bool, error) {
	cfg, err := SessionConfig(url)
	if err != nil {
		return false, err
	}
	return transactionPooled(ctx, cfg)
}

func transactionPooled(ctx context.Context, cfg *pgx.ConnConfig) (bool, error) {
	first, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return false, MapError(err, "pooler check: connect")
	}
	defer first.Close(context.WithoutCancel(ctx))
	pid := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (p int32, err error) {
		err = q.QueryRow(ctx, sqlBackendPID, pgx.QueryExecModeSimpleProtocol).Scan(&p)
		return p, MapError(err, "pooler check")
	}
	own, err := pid(first)
	if err != nil {
		return false, err
	}
	for range poolerProbes {
		other, err := pgx.ConnectConfig(ctx, cfg.Copy())
		if err != nil {
			return false, MapError(err, "pooler check: connect")
		}
		defer other.Close(context.WithoutCancel(ctx))
		tx, err := other.Begin(ctx)
		var pe *pgconn.PgError
		if errors.As(err, &pe) { // no server refuses BEGIN; a pooler in statement mode does
			return true, nil
		} else if err != nil {
			return false, MapError(err, "pooler check")
		}
		theirs, err := pid(tx)
		if err != nil {
			return false, err
		}
		again, err := pid(first)
		if err != nil {
			return false, err
		}
		if theirs == own || again != own {
			return true, nil
		}
	}
	return false, nil
}

// SessionConfig parses a URL for connections of their own (a session URL): the checks of the
// pool's URL (several hosts need target_session_attrs) and its connect timeout.
func SessionConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "db: the session URL cannot be parsed")
	}
	if err := checkHosts(&cfg.Config); err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	return cfg, nil
}

// TransactionPooled reports whether Open found its URL behind a pooler in transaction mode
// (only when Options.DetectPooler asked it to look).
func (d *DB) TransactionPooled() bool { return d.pooled }

// namesExecMode reports whether a URL chooses pgx's query exec mode itself.
func namesExecMode(url string) bool { return strings.Contains(url, "default_query_exec_mode") }
