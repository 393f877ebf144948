package ratingsdb

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

const (
	sqlTunings = `SELECT context_key, model, params, report, tuned_at, auto FROM rating_tunings WHERE game_type = $1`
	// A game type's context keys: see sqlDeleteRatings.
	sqlDeleteTunings = `
DELETE FROM rating_tunings
WHERE context_key = $1 OR (context_key > $1 || '+' AND context_key < $1 || ',')`
	sqlInsertTuning = `
INSERT INTO rating_tunings (context_key, game_type, model, params, report, tuned_at, auto)
VALUES ($1, $2, $3, $4, $5, coalesce($6, now()), $7)
ON CONFLICT (context_key) DO UPDATE
SET model = excluded.model, params = excluded.params, report = excluded.report, tuned_at = excluded.tuned_at, auto = excluded.auto`
	// How many results each context holds, by the context they were rated in.
	sqlResultCounts = `SELECT context_key, count(*) FROM matches WHERE game_type = $1 OR $1 = '' GROUP BY context_key`
)

// errCallback carries the caller's error out of History untouched.
type errCallback struct{ err error }

func (e errCallback) Error() string { return e.err.Error() }

// History implements ratings.Store: the game type's results in the order accepted, read row
// by row from one query (the whole history is never held).
func (s *Store) History(ctx context.Context, gameType string, fn func(ratings.Result) error) (err error) {
	ctx, done := s.db.Call(ctx, opHistory)
	defer done(&err)
	gc, err := ratings.NewContext(gameType, nil)
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(ctx, sqlHistory, gc.GameType)
	if err != nil {
		return db.MapError(err, "history")
	}
	var raw []byte
	_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
		var d resultDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		if err := fn(d.result()); err != nil {
			return errCallback{err}
		}
		return nil
	})
	var ce errCallback
	if errors.As(err, &ce) {
		return ce.err
	}
	return db.MapError(err, "history")
}

// Tunings implements ratings.Store.
func (s *Store) Tunings(ctx context.Context, gameType string) (_ map[string]ratings.Tuning, err error) {
	ctx, done := s.db.Call(ctx, opTunings)
	defer done(&err)
	gc, err := ratings.NewContext(gameType, nil)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, sqlTunings, gc.GameType)
	if err != nil {
		return nil, db.MapError(err, "tunings")
	}
	out := map[string]ratings.Tuning{}
	var key, model string
	var params, report []byte
	var at time.Time
	var auto bool
	_, err = pgx.ForEachRow(rows, []any{&key, &model, &params, &report, &at, &auto}, func() error {
		c, err := ratings.ParseContextKey(key)
		if err != nil {
			return err
		}
		t := ratings.Tuning{Context: c, Model: model, At: at.UTC(), Auto: auto}
		if err := json.Unmarshal(params, &t.Params); err != nil {
			return err
		}
		if err := json.Unmarshal(report, &t.Report); err != nil {
			return err
		}
		out[key] = t
		return nil
	})
	if err != nil {
		return nil, db.MapError(err, "tunings")
	}
	return out, nil
}

// SaveTunings implements ratings.Store: in one transaction, the game type's tunings deleted
// and ts inserted.
func (s *Store) SaveTunings(ctx context.Context, gameType string, ts []ratings.Tuning) (err error) {
	ctx, done := s.db.Call(ctx, opSaveTunings)
	defer done(&err)
	gc, err := ratings.NewContext(gameType, nil)
	if err != nil {
		return err
	}
	if err := ratings.CheckTunings(gc.GameType, ts); err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlDeleteTunings, gc.GameType); err != nil {
			return err
		}
		for _, t := range ts {
			if err := insertTuning(ctx, tx, t); err != nil {
				return err
			}
		}
		return nil
	})
	return db.MapError(err, "save tunings")
}

// insertTuning writes one context's tuning, replacing the one it had.
func insertTuning(ctx context.Context, tx pgx.Tx, t ratings.Tuning) error {
	params, err := json.Marshal(t.Params)
	if err != nil {
		return err
	}
	report, err := json.Marshal(t.Report)
	if err != nil {
		return err
	}
	var at *time.Time
	if !t.At.IsZero() {
		at = &t.At
	}
	_, err = tx.Exec(ctx, sqlInsertTuning, t.Context.Key(), t.Context.GameType, t.Model, params, report, at, t.Auto)
	return err
}

// SaveTuning implements ratings.AutoTuneStore.
func (s *Store) SaveTuning(ctx context.Context, t ratings.Tuning) (err error) {
	ctx, done := s.db.Call(ctx, opSaveTuning)
	defer done(&err)
	if err := ratings.CheckTunings(t.Context.GameType, []ratings.Tuning{t}); err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return insertTuning(ctx, tx, t) })
	return db.MapError(err, "save tuning")
}

// The claim to tune a context is a session advisory lock, held on a connection of the pool
// while the replica tunes it (namespace 5: 2 and 3 are the game types' and contexts', 3 and
// 4 the queue store's).
const (
	sqlTryClaimTune = `SELECT pg_try_advisory_lock(5, hashtext($1))`
	sqlReleaseTune  = `SELECT pg_advisory_unlock(5, hashtext($1))`
)

// ClaimTune implements ratings.AutoTuneStore: the claim holds one of the pool's connections
// until release.
func (s *Store) ClaimTune(ctx context.Context, key string) (_ func(), claimed bool, err error) {
	ctx, done := s.db.Call(ctx, opClaimTune)
	defer done(&err)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, db.MapError(err, "claim tune")
	}
	if err := conn.QueryRow(ctx, sqlTryClaimTune, key).Scan(&claimed); err != nil || !claimed {
		conn.Release()
		return nil, false, db.MapError(err, "claim tune")
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := conn.Exec(uctx, sqlReleaseTune, key); err != nil {
				// A session that could not unlock is closed: its end releases the lock.
				_ = conn.Conn().Close(uctx)
			}
			conn.Release()
		})
	}, true, nil
}

// ResultCounts implements ratings.AutoTuneStore.
func (s *Store) ResultCounts(ctx context.Context, gameType string) (_ map[string]int, err error) {
	ctx, done := s.db.Call(ctx, opResultCounts)
	defer done(&err)
	rows, err := s.pool.Query(ctx, sqlResultCounts, gameType)
	if err != nil {
		return nil, db.MapError(err, "result counts")
	}
	out := map[string]int{}
	var key string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&key, &n}, func() error {
		out[key] = int(n)
		return nil
	})
	return out, db.MapError(err, "result counts")
}
