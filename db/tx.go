package db

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// maxTxAttempts bounds how often InTx runs a transaction that keeps deadlocking.
const maxTxAttempts = 6

// InTx runs fn on a connection of the pool, again (after a short random pause) when it fails
// with a deadlock or a serialization failure (Retryable); whatever transaction fn leaves open
// is rolled back (Release). Its error is mapped to the domain's (MapError), what naming the
// call.
func InTx(ctx context.Context, pool *pgxpool.Pool, what string, fn func(conn *pgxpool.Conn) error) error {
	for attempt := 1; ; attempt++ {
		err := func() error {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer Release(ctx, conn, DefaultTimeout)
			return fn(conn)
		}()
		if err == nil || attempt == maxTxAttempts || !Retryable(err) {
			return MapError(err, what)
		}
		t := time.NewTimer(time.Duration(rand.IntN(attempt*2000)) * time.Microsecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return MapError(ctx.Err(), what)
		case <-t.C:
		}
	}
}

// Committed checks that the transaction a batch ended with COMMIT did commit: a COMMIT of a
// transaction that failed answers ROLLBACK without an error.
func Committed(conn *pgxpool.Conn) error {
	if st := conn.Conn().PgConn().TxStatus(); st != 'I' {
		return fmt.Errorf("db: the transaction is still open after COMMIT (status %q)", st)
	}
	return nil
}

// Release rolls back whatever transaction is still open on conn and returns it to the pool.
// The rollback gets its own deadline (timeout): the caller's context may be the reason it is
// needed. A connection that cannot be rolled back is closed by the pool on release.
func Release(ctx context.Context, conn *pgxpool.Conn, timeout time.Duration) {
	pc := conn.Conn().PgConn()
	if !pc.IsClosed() && !pc.IsBusy() && pc.TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		_, _ = conn.Exec(rctx, "ROLLBACK")
		cancel()
	}
	conn.Release()
}
