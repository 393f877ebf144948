package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Startup says how Connect waits for a database that is not there yet.
type Startup struct {
	// Within bounds the whole start-up: no attempt starts after it has passed, and the one
	// under way is cut short. Zero means a single attempt.
	Within time.Duration
	// Migrate applies the embedded migrations once the database answers.
	Migrate bool
	// Logger, if not nil, gets a line for every attempt that failed.
	Logger *slog.Logger
	// SessionURL, if set, is the URL of the same database for what needs a session of its
	// own (pooler.go): the migrations run on it. With Options.DetectPooler, a session URL
	// behind a pooler in transaction mode is refused, and so is a pooled URL without one.
	SessionURL string
}

// The pauses between attempts grow from firstRetry to lastRetry (doubling, with jitter).
const (
	firstRetry = 250 * time.Millisecond
	lastRetry  = 5 * time.Second
)

// Connect opens the database at url (Open) and migrates it if st.Migrate, trying again with
// a growing pause while the database cannot be reached (apperr.Unavailable: refused, silent,
// starting up), until st.Within has passed. Each attempt is bounded
// by the call deadline (and opening a connection by its connect_timeout), so a database that
// accepts connections but never answers is an attempt that fails, not a start-up that hangs.
// It returns the pool and how many migrations it applied; an error that no retry can cure
// (a malformed URL, a database that does not exist, a refused user or password, a failed
// migration) ends it at once.
func Connect(ctx context.Context, url string, o Options, st Startup) (*DB, int, error) {
	if st.Within > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, st.Within)
		defer cancel()
	}
	start := time.Now()
	pause := firstRetry
	for attempt := 1; ; attempt++ {
		s, n, err := connectOnce(ctx, url, o, st)
		if err == nil {
			if attempt > 1 && st.Logger != nil {
				st.Logger.Info("database ready", "attempt", attempt, "waited", time.Since(start).Round(time.Millisecond).String())
			}
			return s, n, nil
		}
		if apperr.CodeOf(err) != apperr.Unavailable || refusedForGood(err) {
			return nil, 0, err
		}
		deadline, bounded := ctx.Deadline()
		if !bounded || time.Until(deadline) < pause || ctx.Err() != nil {
			return nil, 0, fmt.Errorf("db: the database was not ready after %d attempts in %s: %w",
				attempt, time.Since(start).Round(time.Millisecond), err)
		}
		wait := pause/2 + rand.N(pause) // jitter: replicas started together do not retry together
		if st.Logger != nil {
			st.Logger.Warn("database not ready, retrying", "attempt", attempt, "err", err.Error(),
				"retry_in", wait.Round(time.Millisecond).String(), "gives_up_in", time.Until(deadline).Round(time.Second).String())
		}
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("db: the database was not ready after %d attempts: %w", attempt, err)
		case <-time.After(wait):
		}
		pause = min(2*pause, lastRetry)
	}
}

func connectOnce(ctx context.Context, url string, o Options, st Startup) (*DB, int, error) {
	s, err := Open(ctx, url, o)
	if err != nil {
		return nil, 0, err
	}
	if err := checkSessionURL(ctx, s, o, st.SessionURL); err != nil {
		s.Close()
		return nil, 0, err
	}
	if !st.Migrate {
		return s, 0, nil
	}
	migrateURL := url
	if st.SessionURL != "" {
		migrateURL = st.SessionURL
	}
	n, err := MigrateCount(ctx, migrateURL)
	if err != nil {
		s.Close()
		if apperr.CodeOf(err) == apperr.Unavailable || errors.Is(err, context.DeadlineExceeded) {
			return nil, 0, apperr.Wrap(apperr.Unavailable, err, "db: migrate")
		}
		return nil, 0, fmt.Errorf("db: migrate: %w", err)
	}
	return s, n, nil
}

// checkSessionURL refuses a pool behind a pooler in transaction mode without a session URL,
// and a session URL behind one (a *PoolerError, which no retry cures).
func checkSessionURL(ctx context.Context, d *DB, o Options, sessionURL string) error {
	if !o.DetectPooler {
		return nil
	}
	if sessionURL == "" {
		if d.TransactionPooled() {
			return &PoolerError{}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.withDefaults().Timeout)
	defer cancel()
	pooled, err := TransactionPooled(ctx, sessionURL)
	if err != nil {
		return err
	}
	if pooled {
		return &PoolerError{SessionURL: true}
	}
	return nil
}

// refusedForGood reports a server that answers, and says no: the database named does not
// exist, or the user or password is refused. Waiting does not change that answer (it used to be
// retried for 27 s before the error).
func refusedForGood(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "3D000", "28000", "28P01": // invalid_catalog_name, invalid_authorization_specification, invalid_password
		return true
	}
	return false
}
