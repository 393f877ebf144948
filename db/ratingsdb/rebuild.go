package ratingsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

const (
	sqlLockGameTypeExclusive = `SELECT pg_advisory_xact_lock(2, hashtext($1))`
	// The cut: how far the history goes, read under the exclusive lock (so every result up to
	// it has committed, and every later one will be numbered after it).
	sqlHistoryCut  = `SELECT coalesce(max(seq), 0), count(*) FROM matches WHERE game_type = $1`
	sqlHistorySpan = `SELECT count(*) FROM matches WHERE game_type = $1 AND seq > $2 AND seq <= $3`
	sqlHistory     = `SELECT result FROM matches WHERE game_type = $1 ORDER BY seq`
	// $4 is the sequence number of a result being deleted, left out of the replay (0: none;
	// the numbers start at 1).
	sqlHistoryFrom = `SELECT seq, result FROM matches WHERE game_type = $1 AND seq > $2 AND seq <= $3 AND seq <> $4 ORDER BY seq`
	sqlFindDeleted = `SELECT seq FROM matches WHERE match_id = $1 AND game_type = $2`
	sqlDeleteMatch = `DELETE FROM matches WHERE seq = $1`
	// A game type's context keys are the game type itself and those that start with it and a
	// '+' ("tdm+instagib"); in byte order they all sort before the game type and a ','.
	sqlGameTypeRatings = `
SELECT context_key, is_bot, participant_id FROM ratings
WHERE context_key = $1 OR (context_key > $1 || '+' AND context_key < $1 || ',')`
	sqlDeleteBias = `
DELETE FROM bias_cells
WHERE context_key = $1 OR (context_key > $1 || '+' AND context_key < $1 || ',')`
	sqlDeleteRatingRows = `
DELETE FROM ratings AS r
USING unnest($1::text[], $2::boolean[], $3::text[]) AS u(context_key, is_bot, participant_id)
WHERE r.context_key = u.context_key AND r.is_bot = u.is_bot AND r.participant_id = u.participant_id`
	// The rebuilt rows, in the order results lock them (no deadlock with a result).
	sqlUpsertRatings = `
INSERT INTO ratings AS r (context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
    sigma, offset_sigma, commander_sigma, last_played, season, season_games, surprise, alt_skill, alt_sigma)
SELECT u.context_key, u.game_type, u.is_bot, u.participant_id, u.skill, u.side_offset, u.commander, u.skill_g, u.commander_g, u.games,
    u.sigma, u.offset_sigma, u.commander_sigma, u.last_played, u.season, u.season_games, u.surprise, u.alt_skill, u.alt_sigma
FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[], $10::bigint[],
    $11::float8[], $12::float8[], $13::float8[], $14::bigint[], $15::bigint[], $16::bigint[], $17::float8[], $18::float8[], $19::float8[]) WITH ORDINALITY
  AS u(context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
    sigma, offset_sigma, commander_sigma, last_played, season, season_games, surprise, alt_skill, alt_sigma, n)
ORDER BY u.n
ON CONFLICT (context_key, is_bot, participant_id) DO UPDATE
SET skill = excluded.skill, side_offset = excluded.side_offset, commander = excluded.commander,
    skill_g = excluded.skill_g, commander_g = excluded.commander_g, games = excluded.games,
    sigma = excluded.sigma, offset_sigma = excluded.offset_sigma, commander_sigma = excluded.commander_sigma,
    last_played = excluded.last_played, season = excluded.season, season_games = excluded.season_games, surprise = excluded.surprise,
    alt_skill = excluded.alt_skill, alt_sigma = excluded.alt_sigma, updated_at = now()`
)

// RebuildBatch is how many rating rows a rebuild writes per statement (and transaction)
// while results keep flowing: each batch holds its rows' locks until it commits, which a
// result over one of them waits for.
const RebuildBatch = 1000

// catchUpPasses bounds the rounds in which a rebuild applies the results recorded meanwhile
// without holding results off; what is left is applied in its last, locked step.
const catchUpPasses = 3

// errReplay carries the ReplayFunc's error out untouched.
type errReplay struct{ err error }

func (e errReplay) Error() string { return e.err.Error() }

// Rebuild implements ratings.Store without stopping the game type's results for more than its
// last step:
//
//  1. the cut: under the game type's advisory lock taken exclusively for a moment (it waits
//     for the results under way, which hold it shared), the policy and the last sequence
//     number of its history;
//  2. the history up to the cut is streamed, row by row, into replay: memory grows with the
//     participants and bias cells, not with the results;
//  3. the rebuilt ratings are written in batches of RebuildBatch rows, each its own
//     transaction, while results keep coming (they read and write the live rows as usual);
//  4. up to catchUpPasses times, a new cut, and the results recorded since the last one are
//     applied to the rebuilt states, in order, and the rows they touched written; then the
//     game type's rows the rebuild does not have are deleted, in batches;
//  5. under the exclusive lock, in one transaction: the last results, their rows, and the
//     game type's bias cells replaced by the rebuilt ones.
//
// Every row a result wrote while the rebuild ran is a row of that result's participants, so
// it is written again from the rebuilt states in step 4 or 5, after the result was applied
// to them: the game type ends exactly as if the rebuild had run alone and the results
// recorded meanwhile had come after it, in order. (Their responses were computed from the
// ratings as they were when they arrived.)
//
// The policy is read once, at the cut: a mutator reclassified while a rebuild runs takes
// effect with the next one. A rebuild that fails before writing (the replay's error, a
// state RebuildContexts refuses) changes nothing; one that fails while writing (the database
// gone) leaves the game type's ratings part rebuilt, and is to be run again.
func (s *Store) Rebuild(ctx context.Context, gameType string, replay ratings.ReplayFunc, progress func(ratings.Progress)) (_ ratings.RebuildReport, err error) {
	ctx, done := s.db.Call(ctx, opRebuild)
	defer done(&err)
	gc, err := ratings.NewContext(gameType, nil)
	if err != nil {
		return ratings.RebuildReport{}, err
	}
	rep, err := s.rebuild(ctx, gc.GameType, "", replay, progress)
	if err != nil {
		var re errReplay
		if errors.As(err, &re) {
			return ratings.RebuildReport{}, re.err
		}
		return ratings.RebuildReport{}, db.MapError(err, "rebuild")
	}
	return rep, nil
}

// DeleteResult implements ratings.Store: Rebuild, leaving the result out of the replay from
// the start (found under the first cut's exclusive lock) and deleting its row in the last,
// locked step. Until that step commits, the result is stored: a replay of its body is
// answered as one, and a deletion that fails can be run again.
func (s *Store) DeleteResult(ctx context.Context, matchID, gameType string, replay ratings.ReplayFunc, progress func(ratings.Progress)) (_ ratings.RebuildReport, err error) {
	ctx, done := s.db.Call(ctx, opDeleteResult)
	defer done(&err)
	gc, err := ratings.NewContext(gameType, nil)
	if err != nil {
		return ratings.RebuildReport{}, err
	}
	rep, err := s.rebuild(ctx, gc.GameType, matchID, replay, progress)
	if err != nil {
		var re errReplay
		if errors.As(err, &re) {
			return ratings.RebuildReport{}, re.err
		}
		return ratings.RebuildReport{}, db.MapError(err, "delete result")
	}
	return rep, nil
}

// StoredResult implements ratings.Store.
func (s *Store) StoredResult(ctx context.Context, matchID string) (_ ratings.Result, err error) {
	ctx, done := s.db.Call(ctx, opStoredResult)
	defer done(&err)
	var raw []byte
	if err := s.pool.QueryRow(ctx, `SELECT result FROM matches WHERE match_id = $1`, matchID).Scan(&raw); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return ratings.Result{}, ratings.ResultNotFoundError(matchID)
		}
		return ratings.Result{}, db.MapError(err, "stored result")
	}
	var d resultDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return ratings.Result{}, db.MapError(err, "stored result")
	}
	return d.result(), nil
}

// rebuilding is one rebuild's state between its steps.
type rebuilding struct {
	s        *Store
	gameType string
	deleted  int64 // the sequence number of the result a deletion leaves out; 0 for none
	replay   ratings.ReplayFunc
	policy   *ratings.MutatorPolicy
	states   map[string]*ratings.State
	cut      int64 // the last sequence number applied
	results  int
	tell     func(phase string, done, total int)
}

// rebuild is Rebuild, or with a deleted match id DeleteResult: the steps Rebuild lists.
func (s *Store) rebuild(ctx context.Context, gameType, deleted string, replay ratings.ReplayFunc, progress func(ratings.Progress)) (ratings.RebuildReport, error) {
	rb := &rebuilding{s: s, gameType: gameType, replay: replay, tell: func(phase string, done, total int) {
		if progress != nil {
			progress(ratings.Progress{Phase: phase, Done: done, Total: total})
		}
	}}
	total, err := rb.firstCut(ctx, deleted)
	if err != nil {
		return ratings.RebuildReport{}, err
	}
	rb.tell("replaying", 0, total)
	if err := rb.apply(ctx, s.pool, 0, rb.cut, total, "replaying", nil); err != nil {
		return ratings.RebuildReport{}, err
	}
	if _, _, err := ratings.RebuildContexts(gameType, rb.states); err != nil {
		return ratings.RebuildReport{}, err // checked before anything is written
	}
	if err := rb.writeAll(ctx); err != nil {
		return ratings.RebuildReport{}, err
	}
	if err := rb.catchUp(ctx); err != nil {
		return ratings.RebuildReport{}, err
	}
	if err := rb.deleteStale(ctx); err != nil {
		return ratings.RebuildReport{}, err
	}
	rep, err := rb.finish(ctx)
	if err != nil {
		return ratings.RebuildReport{}, err
	}
	rep.Results = rb.results
	rb.tell("writing", rep.Ratings, rep.Ratings)
	return rep, nil
}

// firstCut is step 1: under the exclusive lock, the policy, the cut and (for a deletion) the
// deleted result's number. It returns how many results the replay up to the cut applies.
func (rb *rebuilding) firstCut(ctx context.Context, deleted string) (int, error) {
	var total int
	err := rb.exclusive(ctx, func(tx pgx.Tx) error {
		if deleted != "" {
			err := tx.QueryRow(ctx, sqlFindDeleted, deleted, rb.gameType).Scan(&rb.deleted)
			if errors.Is(err, pgx.ErrNoRows) {
				return ratings.ResultNotFoundError(deleted)
			}
			if err != nil {
				return err
			}
		}
		var err error
		if rb.policy, err = rb.s.policy(ctx, tx); err != nil {
			return err
		}
		return tx.QueryRow(ctx, sqlHistoryCut, rb.gameType).Scan(&rb.cut, &total)
	})
	if err != nil {
		return 0, err
	}
	if rb.deleted != 0 {
		total--
	}
	return total, nil
}

// catchUp is step 4's passes: the results recorded since the last cut applied, and the rows
// they touched written, without holding results off.
func (rb *rebuilding) catchUp(ctx context.Context) error {
	for range catchUpPasses {
		cut, n, err := rb.nextCut(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		touched := map[rowKey]struct{}{}
		if err := rb.apply(ctx, rb.s.pool, rb.cut, cut, n, "catching up", touched); err != nil {
			return err
		}
		rb.cut = cut
		if err := rb.writeRows(ctx, sortedRows(touched)); err != nil {
			return err
		}
	}
	return nil
}

// finish is step 5, under the exclusive lock in one transaction: the last results applied and
// their rows written, the deleted result's row deleted, and the game type's bias cells
// replaced by the rebuilt ones.
func (rb *rebuilding) finish(ctx context.Context) (ratings.RebuildReport, error) {
	var rep ratings.RebuildReport
	err := rb.exclusive(ctx, func(tx pgx.Tx) error {
		var last int64
		var n int
		if err := tx.QueryRow(ctx, sqlHistoryCut, rb.gameType).Scan(&last, &n); err != nil {
			return err
		}
		touched := map[rowKey]struct{}{}
		if last > rb.cut {
			if err := tx.QueryRow(ctx, sqlHistorySpan, rb.gameType, rb.cut, last).Scan(&n); err != nil {
				return err
			}
			if err := rb.apply(ctx, tx, rb.cut, last, n, "catching up", touched); err != nil {
				return err
			}
			rb.cut = last
		}
		contexts, r, err := ratings.RebuildContexts(rb.gameType, rb.states)
		if err != nil {
			return err
		}
		rep = r
		for _, batch := range chunk(sortedRows(touched), RebuildBatch) {
			if _, err := tx.Exec(ctx, sqlUpsertRatings, rb.ratingArgs(batch)...); err != nil {
				return err
			}
		}
		if rb.deleted != 0 {
			// Gone already if another deletion of the same match committed first: the history
			// is the same without it either way, and so are the rows written here.
			if _, err := tx.Exec(ctx, sqlDeleteMatch, rb.deleted); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, sqlDeleteBias, rb.gameType); err != nil {
			return err
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"bias_cells"},
			[]string{"context_key", "side_a", "side_b", "map", "size", "shard", "game_type", "wins", "games",
				"presence", "presence_weight", "newcomer", "newcomer_weight", "scale", "scale_weight", "alt_scale", "alt_scale_weight", "evidence"},
			pgx.CopyFromRows(biasRows(rb.gameType, contexts)))
		return err
	})
	return rep, err
}

// apply streams the results numbered (from, to] into the replay, telling progress under
// phase against total, and adds the rows they touch to touched (if not nil).
func (rb *rebuilding) apply(ctx context.Context, q querier, from, to int64, total int, phase string, touched map[rowKey]struct{}) error {
	// Through q, and before the history's rows hold it: in the last step, a connection of its
	// own under the exclusive lock would be one more for the results' committers to wait for.
	seasons, err := gameSeasons(ctx, q, rb.gameType)
	if err != nil {
		return err
	}
	rows, err := q.Query(ctx, sqlHistoryFrom, rb.gameType, from, to, rb.deleted)
	if err != nil {
		return err
	}
	defer rows.Close()
	var readErr error
	n := 0
	history := func(yield func(int64, ratings.Result) bool) {
		for rows.Next() {
			var seq int64
			var raw []byte
			if readErr = rows.Scan(&seq, &raw); readErr != nil {
				return
			}
			var d resultDoc
			if readErr = json.Unmarshal(raw, &d); readErr != nil {
				return
			}
			r := d.result()
			if touched != nil {
				if c, _, err := rb.policy.Context(r.GameType, r.Mutators); err == nil {
					for _, p := range ratings.ResultParticipants(r) {
						touched[rowKey{c.Key(), p}] = struct{}{}
					}
				}
			}
			if n++; n%1000 == 0 && n < total {
				rb.tell(phase, n, total)
			}
			if !yield(seq, r) {
				return
			}
		}
		readErr = rows.Err()
	}
	lo := from
	if rb.states == nil {
		lo = -1 // a reset before the first result comes after it
	}
	states, _, err := ratings.ReplayWithResets(rb.policy, rb.replay, rb.states, seasons, lo, to, history)
	rows.Close()
	switch {
	case readErr != nil: // the replay stopped because the history could not be read
		return readErr
	case err != nil:
		return errReplay{err}
	case rows.Err() != nil:
		return rows.Err()
	}
	rb.states = states
	rb.results += n
	rb.tell(phase, n, n)
	return nil
}

// nextCut takes the exclusive lock for a moment, to read how far the history goes now, and
// how many results came since the last cut.
func (rb *rebuilding) nextCut(ctx context.Context) (cut int64, n int, err error) {
	err = rb.exclusive(ctx, func(tx pgx.Tx) error {
		var all int
		if err := tx.QueryRow(ctx, sqlHistoryCut, rb.gameType).Scan(&cut, &all); err != nil {
			return err
		}
		return tx.QueryRow(ctx, sqlHistorySpan, rb.gameType, rb.cut, cut).Scan(&n)
	})
	return cut, n, err
}

// A cut's wait for the exclusive lock is bounded. While it waits for the results under way
// (which hold the lock shared), Postgres queues every later result behind it: one batch
// stalled in flight (its commit waiting out a checkpoint that another database's DROP
// forced, its apply short of CPU) held them all for as long as it stalled, and under a
// loaded test suite results passed the store's deadline. A cut that has not had the lock
// within its wait gives its place up for as long again, then tries again, waiting twice as
// long each time up to cutLockWaitMax, so a rebuild still gets the lock under any load that
// lets batches end.
const (
	cutLockWait    = 100 * time.Millisecond
	cutLockWaitMax = 1600 * time.Millisecond
)

// lockNotAvailable is the SQLSTATE of a lock not granted within lock_timeout.
const lockNotAvailable = "55P03"

// errCutWait is a cut that did not get the exclusive lock within its wait.
var errCutWait = errors.New("db: rebuild: the exclusive lock was not granted in time")

// exclusive runs fn in a transaction that holds the game type's lock exclusively, taken with
// bounded waits (see cutLockWait). fn runs only once the lock is held.
func (rb *rebuilding) exclusive(ctx context.Context, fn func(pgx.Tx) error) error {
	wait := cutLockWait
	for {
		err := pgx.BeginFunc(ctx, rb.s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", wait.Milliseconds())); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, sqlLockGameTypeExclusive, rb.gameType); err != nil {
				if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == lockNotAvailable {
					return errCutWait
				}
				return err
			}
			if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = DEFAULT"); err != nil {
				return err
			}
			return fn(tx)
		})
		if !errors.Is(err, errCutWait) {
			return err
		}
		t := time.NewTimer(wait) // the results queued behind the cut go through meanwhile
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, cutLockWaitMax)
	}
}

// writeAll writes every rebuilt rating in batches, without holding results off.
func (rb *rebuilding) writeAll(ctx context.Context) error {
	want := map[rowKey]struct{}{}
	for key, st := range rb.states {
		for p := range st.Ratings {
			want[rowKey{key, p}] = struct{}{}
		}
	}
	all := sortedRows(want)
	rb.tell("writing", 0, len(all))
	for i, batch := range chunk(all, RebuildBatch) {
		if _, err := rb.s.pool.Exec(ctx, sqlUpsertRatings, rb.ratingArgs(batch)...); err != nil {
			return err
		}
		rb.tell("writing", min((i+1)*RebuildBatch, len(all)), len(all))
	}
	return nil
}

// deleteStale deletes, in batches and without holding results off, the game type's rows the
// rebuilt states do not have (a context the policy no longer splits, say). A row a result
// created since the last cut is deleted too, and written again by the last step.
func (rb *rebuilding) deleteStale(ctx context.Context) error {
	rows, err := rb.s.pool.Query(ctx, sqlGameTypeRatings, rb.gameType)
	if err != nil {
		return err
	}
	var stale []rowKey
	var k rowKey
	if _, err := pgx.ForEachRow(rows, []any{&k.ctx, &k.p.Bot, &k.p.ID}, func() error {
		if st := rb.states[k.ctx]; st == nil {
			stale = append(stale, k)
		} else if _, ok := st.Ratings[k.p]; !ok {
			stale = append(stale, k)
		}
		return nil
	}); err != nil {
		return err
	}
	slices.SortFunc(stale, rowKey.compare)
	for _, batch := range chunk(stale, RebuildBatch) {
		ctxs, bots, ids := make([]string, len(batch)), make([]bool, len(batch)), make([]string, len(batch))
		for i, k := range batch {
			ctxs[i], bots[i], ids[i] = k.ctx, k.p.Bot, k.p.ID
		}
		if _, err := rb.s.pool.Exec(ctx, sqlDeleteRatingRows, ctxs, bots, ids); err != nil {
			return err
		}
	}
	return nil
}

// writeRows writes the rebuilt ratings of rows (sorted) in batches.
func (rb *rebuilding) writeRows(ctx context.Context, rows []rowKey) error {
	for _, batch := range chunk(rows, RebuildBatch) {
		if _, err := rb.s.pool.Exec(ctx, sqlUpsertRatings, rb.ratingArgs(batch)...); err != nil {
			return err
		}
	}
	return nil
}

// ratingArgs are sqlUpsertRatings' arguments for rows, each a rating of the rebuilt states.
func (rb *rebuilding) ratingArgs(rows []rowKey) []any {
	n := len(rows)
	ctxs, games, bots, ids := make([]string, n), make([]string, n), make([]bool, n), make([]string, n)
	skill := make([]float64, n)
	offset, commander, skillG, commanderG := make([]pgtype.Float8, n), make([]pgtype.Float8, n), make([]pgtype.Float8, n), make([]pgtype.Float8, n)
	played := make([]int64, n)
	sigma, offsetSigma, commanderSigma := make([]pgtype.Float8, n), make([]pgtype.Float8, n), make([]pgtype.Float8, n)
	for i, k := range rows {
		r := rb.states[k.ctx].Ratings[k.p]
		ctxs[i], games[i], bots[i], ids[i] = k.ctx, rb.gameType, k.p.Bot, k.p.ID
		skill[i], offset[i], commander[i], skillG[i], commanderG[i] = r.Skill, ratingValue(r.Offset), ratingValue(r.Commander), ratingValue(r.SkillG), ratingValue(r.CommanderG)
		played[i] = int64(r.Games)
		sigma[i], offsetSigma[i], commanderSigma[i] = ratingValue(r.Sigma), ratingValue(r.OffsetSigma), ratingValue(r.CommanderSigma)
	}
	args := []any{ctxs, games, bots, ids, skill, offset, commander, skillG, commanderG, played, sigma, offsetSigma, commanderSigma}
	return append(args, ratingExtras(n, func(i int) ratings.Rating { return rb.states[rows[i].ctx].Ratings[rows[i].p] })...)
}

// biasRows are the rebuilt bias cells of every context, each with its side pairs' totals as
// the replay summed them (map ”, size 0), in shard 0.
func biasRows(gameType string, contexts []ratings.ContextState) [][]any {
	var out [][]any
	for _, cs := range contexts {
		key := cs.Context.Key()
		cell := func(k ratings.BiasKey, c ratings.BiasCell) []any {
			t := c.Terms
			return []any{key, k.SideA, k.SideB, k.Map, int32(k.Size), int16(0), gameType, c.Wins, c.Games,
				t.Presence, t.PresenceWeight, t.Newcomer, t.NewcomerWeight, t.Scale, t.ScaleWeight, t.AltScale, t.AltScaleWeight, t.Evidence}
		}
		for _, e := range cs.State.Bias.Entries() {
			out = append(out, cell(e.Key, e.BiasCell))
		}
		for _, pair := range cs.State.Bias.Pairs() {
			out = append(out, cell(ratings.BiasKey{SideA: pair.SideA, SideB: pair.SideB}, cs.State.Bias.Total(pair)))
		}
	}
	return out
}

// sortedRows lists a set of rows in the order results lock them.
func sortedRows(set map[rowKey]struct{}) []rowKey {
	out := make([]rowKey, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.SortFunc(out, rowKey.compare)
	return out
}

// chunk splits rows into batches of at most n.
func chunk[T any](rows []T, n int) [][]T {
	var out [][]T
	for len(rows) > 0 {
		k := min(n, len(rows))
		out = append(out, rows[:k])
		rows = rows[k:]
	}
	return out
}
