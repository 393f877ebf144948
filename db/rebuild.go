package db

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"matchmaker/internal/ratings"
)

const (
	sqlLockGameTypeExclusive = `SELECT pg_advisory_xact_lock(2, hashtext($1))`
	sqlCountHistory          = `SELECT count(*) FROM matches WHERE game_type = $1`
	sqlHistory               = `SELECT result FROM matches WHERE game_type = $1 ORDER BY seq`
	// A game type's context keys are the game type itself and those that start with it and a
	// '+' ("tdm+instagib"); in byte order they all sort before the game type and a ','.
	sqlDeleteRatings = `
DELETE FROM ratings
WHERE context_key = $1 OR (context_key > $1 || '+' AND context_key < $1 || ',')`
	sqlDeleteBias = `
DELETE FROM bias_cells
WHERE context_key = $1 OR (context_key > $1 || '+' AND context_key < $1 || ',')`
)

// errReplay carries the ReplayFunc's error out untouched.
type errReplay struct{ err error }

func (e errReplay) Error() string { return e.err.Error() }

// Rebuild implements ratings.Store. In one transaction it takes the game type's advisory lock
// exclusively (so it waits for the results of that game type under way and holds off new
// ones until it commits), reads the policy and the history in the order it was accepted,
// replays it, deletes the game type's ratings and bias cells and copies in the new ones.
func (s *Store) Rebuild(ctx context.Context, gameType string, replay ratings.ReplayFunc, progress func(ratings.Progress)) (_ ratings.RebuildReport, err error) {
	ctx, done := s.calls.start(ctx, opRebuild)
	defer done(&err)
	gc, err := ratings.NewContext(gameType, nil)
	if err != nil {
		return ratings.RebuildReport{}, err
	}
	rep, err := s.rebuild(ctx, gc.GameType, replay, progress)
	if err != nil {
		var re errReplay
		if errors.As(err, &re) {
			return ratings.RebuildReport{}, re.err
		}
		return ratings.RebuildReport{}, mapError(err, "rebuild")
	}
	return rep, nil
}

func (s *Store) rebuild(ctx context.Context, gameType string, replay ratings.ReplayFunc, progress func(ratings.Progress)) (ratings.RebuildReport, error) {
	var rep ratings.RebuildReport
	tell := func(phase string, done, total int) {
		if progress != nil {
			progress(ratings.Progress{Phase: phase, Done: done, Total: total})
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return rep, err
	}
	defer func() {
		// The rollback's own deadline: ctx may be the reason it is needed.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.calls.opts.Timeout)
		_ = tx.Rollback(rctx)
		cancel()
	}()

	if _, err := tx.Exec(ctx, sqlLockGameTypeExclusive, gameType); err != nil {
		return rep, err
	}
	policy, err := s.policy(ctx, tx)
	if err != nil {
		return rep, err
	}
	var total int
	if err := tx.QueryRow(ctx, sqlCountHistory, gameType).Scan(&total); err != nil {
		return rep, err
	}
	tell("reading", 0, total)
	history := make([]ratings.Result, 0, total)
	rows, err := tx.Query(ctx, sqlHistory, gameType)
	if err != nil {
		return rep, err
	}
	var raw []byte
	if _, err := pgx.ForEachRow(rows, []any{&raw}, func() error {
		var d resultDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		history = append(history, d.result())
		if n := len(history); n%1000 == 0 && n < total {
			tell("reading", n, total)
		}
		return nil
	}); err != nil {
		return rep, err
	}
	tell("reading", len(history), len(history))

	tell("replaying", 0, len(history))
	states, err := replay(policy, history)
	if err != nil {
		return rep, errReplay{err}
	}
	tell("replaying", len(history), len(history))
	contexts, rep, err := ratings.RebuildContexts(gameType, states)
	if err != nil {
		return rep, err
	}
	rep.Results = len(history)

	tell("writing", 0, rep.Ratings)
	if _, err := tx.Exec(ctx, sqlDeleteRatings, gameType); err != nil {
		return rep, err
	}
	if _, err := tx.Exec(ctx, sqlDeleteBias, gameType); err != nil {
		return rep, err
	}
	var ratingRows, biasRows [][]any
	for _, cs := range contexts {
		key := cs.Context.Key()
		for _, p := range cs.State.Participants() {
			r := cs.State.Ratings[p]
			ratingRows = append(ratingRows, []any{key, p.Bot, p.ID, gameType, r.Skill, ratingValue(r.Offset), ratingValue(r.Commander),
				ratingValue(r.SkillG), ratingValue(r.CommanderG), int64(r.Games), ratingValue(r.Sigma), ratingValue(r.OffsetSigma), ratingValue(r.CommanderSigma)})
		}
		cell := func(key string, k ratings.BiasKey, c ratings.BiasCell) []any {
			t := c.Terms
			return []any{key, k.SideA, k.SideB, k.Map, int32(k.Size), int16(0), gameType, c.Wins, c.Games,
				t.Presence, t.PresenceWeight, t.Newcomer, t.NewcomerWeight, t.Scale, t.ScaleWeight}
		}
		for _, e := range cs.State.Bias.Entries() {
			biasRows = append(biasRows, cell(key, e.Key, e.BiasCell))
		}
		for _, pair := range cs.State.Bias.Pairs() { // each pair's total: map '', size 0
			biasRows = append(biasRows, cell(key, ratings.BiasKey{SideA: pair.SideA, SideB: pair.SideB}, cs.State.Bias.Total(pair)))
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"ratings"},
		[]string{"context_key", "is_bot", "participant_id", "game_type", "skill", "side_offset", "commander", "skill_g", "commander_g", "games",
			"sigma", "offset_sigma", "commander_sigma"},
		pgx.CopyFromRows(ratingRows)); err != nil {
		return rep, err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"bias_cells"},
		[]string{"context_key", "side_a", "side_b", "map", "size", "shard", "game_type", "wins", "games",
			"presence", "presence_weight", "newcomer", "newcomer_weight", "scale", "scale_weight"},
		pgx.CopyFromRows(biasRows)); err != nil {
		return rep, err
	}
	if err := tx.Commit(ctx); err != nil {
		return rep, err
	}
	tell("writing", rep.Ratings, rep.Ratings)
	return rep, nil
}
