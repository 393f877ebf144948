package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// DB is a connection pool to the database both stores use, with the call deadlines of
// Options, the sockets it opened (so that a shutdown can close them however stuck), and the
// schema check of the readiness probe. Its methods are safe for concurrent use.
type DB struct {
	pool    *pgxpool.Pool
	calls   *calls
	sockets *sockets
	schema  schemaReady // Ready found the schema at SchemaVersion
	pooled  bool        // a pooler in transaction mode is in front (Options.DetectPooler)
}

// DefaultMaxConns is the pool size when the URL does not set pool_max_conns: enough for the
// service's concurrent requests to commit together (group commit) rather than queue for a
// connection.
const DefaultMaxConns = 16

// Open connects to the database at url (a postgres:// URL or a key=value string; pgxpool's
// pool_* parameters are honoured) with the deadlines of o, and checks that it answers (the
// first Ping has the call deadline too). It does not migrate: call Migrate first. A database
// that cannot be reached is an apperr.Unavailable error.
func Open(ctx context.Context, url string, o Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "db: the database URL cannot be parsed")
	}
	if err := checkHosts(&cfg.ConnConfig.Config); err != nil {
		return nil, err
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = int32(o.withDefaults().MaxConns)
	}
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	pooled := false
	if o.DetectPooler {
		dctx, cancel := context.WithTimeout(ctx, o.withDefaults().Timeout)
		pooled, err = transactionPooled(dctx, cfg.ConnConfig)
		cancel()
		if err != nil {
			return nil, err
		}
		if pooled && !namesExecMode(url) {
			cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
		}
	}
	socks := newSockets()
	cfg.ConnConfig.DialFunc = socks.dial
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, MapError(err, "open")
	}
	d := &DB{pool: pool, calls: newCalls(o), sockets: socks, pooled: pooled}
	if err := d.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return d, nil
}

// Pool is the connection pool, for the stores' queries, health checks and metrics.
func (d *DB) Pool() *pgxpool.Pool { return d.pool }

// Timeout is the call deadline of an ordinary Op (Options.Timeout).
func (d *DB) Timeout() time.Duration { return d.calls.opts.Timeout }

var opPing = NewOp("ping")

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) (err error) {
	ctx, done := d.Call(ctx, opPing)
	defer done(&err)
	return MapError(d.pool.Ping(ctx), "ping")
}

// Close closes the pool, waiting for the calls in flight however long they take.
func (d *DB) Close() { _ = d.Shutdown(context.Background()) }

// Shutdown runs each drain (a store's writes still queued, written first) and closes the
// pool. New calls fail at once (Unavailable); the calls in flight may finish until ctx ends.
// Then Shutdown stops waiting: it cancels the calls left, closes every socket the pool opened
// (whatever pgx is waiting for on it) and returns an error that says what it abandoned.
// (pgxpool's Close alone waits for every connection in use to come back, which a call stuck
// on a frozen server never does before its deadline.)
func (d *DB) Shutdown(ctx context.Context, drain ...func()) error {
	closed := make(chan struct{})
	go func() {
		for _, f := range drain {
			f()
		}
		d.pool.Close()
		close(closed)
	}()
	select {
	case <-closed:
		return nil
	case <-ctx.Done():
	}
	running, inUse := d.calls.running(), d.pool.Stat().AcquiredConns()
	d.calls.abortNow()
	n := d.sockets.closeAll()
	select {
	case <-closed:
	case <-time.After(100 * time.Millisecond): // the pool's goroutines end on their own
	}
	return fmt.Errorf("db: the shutdown deadline passed: abandoned the calls in flight (%s) and %d connections in use; closed %d sockets", running, inUse, n)
}
