package ratingsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The seasons (migration 00011). A reset is one short transaction that gives the season its
// epoch and mean (the moment results are ordered against), then passes over the context's
// ratings, ResetBatch rows at a time, each its own transaction, skipping the rows a result
// holds: that result resets them itself (RecordResult reads the reset seasons after it has
// locked its rows, and CatchUp applies what a row has not had). Every reset of a row is
// decided under its lock by its epoch, so none is applied twice, and results never wait for
// more than one pass's rows.

const seasonColumns = `context_key, name, starts_at, ends_at, definition, epoch, reset_at, coalesce(reset_mean, 0),
    coalesce(reset_sigma, 0), coalesce(reset_after, 0), final_at, coalesce(reset_alt_mean, 0)`

const (
	// The contexts' seasons whose reset was applied.
	sqlResetSeasons = `SELECT ` + seasonColumns + ` FROM seasons WHERE context_key = ANY($1::text[]) AND epoch > 0`
	sqlSeasons      = `SELECT ` + seasonColumns + ` FROM seasons WHERE game_type = $1 OR $1 = '' ORDER BY context_key, starts_at`
	// A context's seasons, locked: a definition or a reset is checked against them.
	sqlContextSeasons = `SELECT ` + seasonColumns + ` FROM seasons WHERE context_key = $1 ORDER BY starts_at FOR UPDATE`
	sqlInsertSeason   = `
INSERT INTO seasons (context_key, name, game_type, starts_at, ends_at, definition) VALUES ($1, $2, $3, $4, $5, $6)`
	sqlUpdateSeason = `UPDATE seasons SET starts_at = $3, ends_at = $4, definition = $5 WHERE context_key = $1 AND name = $2`
	// The context's players' skills, in participant order as ratings.MeanSkill and MeanAltSkill sum them.
	sqlContextSkills = `SELECT skill, coalesce(alt_skill, 0), coalesce(alt_sigma, 0) FROM ratings
WHERE context_key = $1 AND NOT is_bot ORDER BY participant_id`
	sqlLastSeq   = `SELECT coalesce(max(seq), 0) FROM matches WHERE game_type = $1`
	sqlMarkReset = `
UPDATE seasons SET epoch = $3, reset_at = $4, reset_mean = $5, reset_sigma = $6, reset_after = $7, reset_alt_mean = $8
WHERE context_key = $1 AND name = $2`
	// A pass of a reset: rows of the context behind the epoch, not held by a result.
	sqlRatingsBehind = `
SELECT is_bot, participant_id, ` + ratingColumns + ` FROM ratings
WHERE context_key = $1 AND coalesce(season, 0) < $2
ORDER BY is_bot, participant_id
LIMIT $3
FOR UPDATE SKIP LOCKED`
	sqlResetRows = `
UPDATE ratings AS r SET skill = u.skill, sigma = u.sigma, season = u.season, season_games = NULL,
    alt_skill = u.alt_skill, alt_sigma = u.alt_sigma, updated_at = now()
FROM unnest($2::boolean[], $3::text[], $4::float8[], $5::float8[], $6::bigint[], $7::float8[], $8::float8[])
    AS u(is_bot, participant_id, skill, sigma, season, alt_skill, alt_sigma)
WHERE r.context_key = $1 AND r.is_bot = u.is_bot AND r.participant_id = u.participant_id`
	sqlMarkFinal        = `UPDATE seasons SET final_at = $3 WHERE context_key = $1 AND name = $2`
	sqlDeleteStandings  = `DELETE FROM season_standings WHERE context_key = $1 AND season = $2`
	sqlStandingsColumns = `context_key, season, position, player_id, of_players, tier, score, rating`
	sqlStandings        = `
SELECT s.context_key, s.season, n.starts_at, s.position, s.player_id, s.of_players, s.tier, s.score, s.rating
FROM season_standings s JOIN seasons n ON n.context_key = s.context_key AND n.name = s.season
WHERE s.context_key = $1 AND s.season = $2 AND s.position > $3
ORDER BY s.position LIMIT $4`
	sqlPlayerStandings = `
SELECT s.context_key, s.season, n.starts_at, s.position, s.player_id, s.of_players, s.tier, s.score, s.rating
FROM season_standings s JOIN seasons n ON n.context_key = s.context_key AND n.name = s.season
WHERE s.player_id = $1
ORDER BY s.context_key, n.starts_at`
)

// ResetBatch is how many ratings one pass of a season's reset rewrites (and locks) at once.
const ResetBatch = 2000

// seasonDoc is a season's definition as stored (seasons.definition).
type seasonDoc struct {
	Keep           float64        `json:"keep"`
	AddSD          float64        `json:"add_sd"`
	PlacementGames int            `json:"placement_games"`
	Fixed          []ratings.Tier `json:"fixed,omitempty"`
	Percentiles    []float64      `json:"percentiles,omitempty"`
	Names          []string       `json:"names,omitempty"`
}

func docOf(se ratings.Season) seasonDoc {
	return seasonDoc{Keep: se.Reset.Keep, AddSD: se.Reset.AddSD, PlacementGames: se.PlacementGames,
		Fixed: se.Tiers.Fixed, Percentiles: se.Tiers.Percentiles, Names: se.Tiers.Names}
}

// scanSeasons reads rows of seasonColumns.
func scanSeasons(rows pgx.Rows, each func(ratings.Season)) error {
	var key string
	var raw []byte
	var resetAt, finalAt pgtype.Timestamptz
	var se ratings.Season
	_, err := pgx.ForEachRow(rows, []any{&key, &se.Name, &se.StartsAt, &se.EndsAt, &raw, &se.Epoch, &resetAt, &se.ResetMean,
		&se.ResetSigma, &se.ResetAfter, &finalAt, &se.ResetAltMean}, func() error {
		c, err := ratings.ParseContextKey(key)
		if err != nil {
			return fmt.Errorf("stored context key %q: %w", key, err)
		}
		var d seasonDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("season %s %s: %w", key, se.Name, err)
		}
		out := se
		out.Context = c
		out.StartsAt, out.EndsAt = se.StartsAt.UTC(), se.EndsAt.UTC()
		out.Reset, out.PlacementGames = ratings.SeasonReset{Keep: d.Keep, AddSD: d.AddSD}, d.PlacementGames
		out.Tiers = ratings.Tiers{Fixed: d.Fixed, Percentiles: d.Percentiles, Names: d.Names}
		out.ResetAt, out.FinalAt = time.Time{}, time.Time{}
		if resetAt.Valid {
			out.ResetAt = resetAt.Time.UTC()
		}
		if finalAt.Valid {
			out.FinalAt = finalAt.Time.UTC()
		}
		each(out)
		return nil
	})
	return err
}

// uniqueContexts lists the context keys of rows, once each.
func uniqueContexts(rows []rowKey) []string {
	out := make([]string, 0, 1)
	for _, k := range rows {
		if !slices.Contains(out, k.ctx) {
			out = append(out, k.ctx)
		}
	}
	return out
}

// contextSeasons reads a context's seasons in tx, locked.
func contextSeasons(ctx context.Context, tx pgx.Tx, c ratings.Context) ([]ratings.Season, error) {
	rows, err := tx.Query(ctx, sqlContextSeasons, c.Key())
	if err != nil {
		return nil, err
	}
	var out []ratings.Season
	err = scanSeasons(rows, func(se ratings.Season) { out = append(out, se) })
	return out, err
}

func findSeason(list []ratings.Season, name string) (ratings.Season, bool) {
	i := slices.IndexFunc(list, func(se ratings.Season) bool { return se.Name == name })
	if i < 0 {
		return ratings.Season{}, false
	}
	return list[i], true
}

// PutSeason implements ratings.SeasonStore.
func (s *Store) PutSeason(ctx context.Context, se ratings.Season) (_ ratings.Season, err error) {
	ctx, done := s.db.Call(ctx, opPutSeason)
	defer done(&err)
	if err := se.Validate(); err != nil {
		return ratings.Season{}, err
	}
	var out ratings.Season
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The first definition of a context has no row to lock: the context's advisory lock
		// serializes two of them.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(3, hashtext($1))`, se.Context.Key()); err != nil {
			return err
		}
		others, err := contextSeasons(ctx, tx, se.Context)
		if err != nil {
			return err
		}
		if err := ratings.CheckSeasonOrder(se, others); err != nil {
			return err
		}
		doc, err := json.Marshal(docOf(se))
		if err != nil {
			return err
		}
		if old, ok := findSeason(others, se.Name); ok {
			if out, err = ratings.Redefine(old, se); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, sqlUpdateSeason, se.Context.Key(), se.Name, se.StartsAt, se.EndsAt, doc)
			return err
		}
		out = se
		out.Epoch, out.ResetAt, out.FinalAt = 0, time.Time{}, time.Time{}
		_, err = tx.Exec(ctx, sqlInsertSeason, se.Context.Key(), se.Name, se.Context.GameType, se.StartsAt, se.EndsAt, doc)
		return err
	})
	if err != nil {
		return ratings.Season{}, db.MapError(err, "put season")
	}
	out.StartsAt, out.EndsAt = out.StartsAt.UTC(), out.EndsAt.UTC()
	return out, nil
}

// Seasons implements ratings.SeasonStore.
func (s *Store) Seasons(ctx context.Context, gameType string) (_ []ratings.Season, err error) {
	ctx, done := s.db.Call(ctx, opSeasons)
	defer done(&err)
	game := ""
	if gameType != "" {
		gc, err := ratings.NewContext(gameType, nil)
		if err != nil {
			return nil, err
		}
		game = gc.GameType
	}
	out, err := gameSeasons(ctx, s.pool, game)
	if err != nil {
		return nil, db.MapError(err, "seasons")
	}
	return out, nil
}

// gameSeasons are the seasons of a canonical game type ("": of all), read through q.
func gameSeasons(ctx context.Context, q querier, game string) ([]ratings.Season, error) {
	rows, err := q.Query(ctx, sqlSeasons, game)
	if err != nil {
		return nil, err
	}
	var out []ratings.Season
	if err := scanSeasons(rows, func(se ratings.Season) { out = append(out, se) }); err != nil {
		return nil, err
	}
	return out, nil
}

// ResetSeason implements ratings.SeasonStore: the mark, then the passes (see above). A reset
// marked by another call (or replica) that has not finished its passes is finished by this
// one: the passes are idempotent.
func (s *Store) ResetSeason(ctx context.Context, c ratings.Context, name string, at time.Time, priorSigma float64) (_ ratings.Season, err error) {
	ctx, done := s.db.Call(ctx, opResetSeason)
	defer done(&err)
	se, err := s.markReset(ctx, c, name, at, priorSigma)
	if err != nil {
		return ratings.Season{}, err
	}
	for {
		n, err := s.resetPass(ctx, c, se)
		if err != nil {
			return ratings.Season{}, db.MapError(err, "reset season")
		}
		if n < ResetBatch {
			return se, nil
		}
	}
}

// markReset gives the season its epoch, mean and place in the history, once, in one short
// transaction; a season marked already is returned as it is.
func (s *Store) markReset(ctx context.Context, c ratings.Context, name string, at time.Time, priorSigma float64) (ratings.Season, error) {
	var se ratings.Season
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		list, err := contextSeasons(ctx, tx, c)
		if err != nil {
			return err
		}
		var ok bool
		if se, ok = findSeason(list, name); !ok {
			return ratings.SeasonNotFoundError(c, name)
		}
		if se.Epoch > 0 {
			return nil
		}
		if at.Before(se.StartsAt) {
			return ratings.SeasonNotStartedError(c, name, se.StartsAt, at)
		}
		var epoch int64
		for _, o := range list {
			epoch = max(epoch, o.Epoch)
		}
		mean, altMean, err := contextMean(ctx, tx, c)
		if err != nil {
			return err
		}
		var after int64
		if err := tx.QueryRow(ctx, sqlLastSeq, c.GameType).Scan(&after); err != nil {
			return err
		}
		se.Epoch, se.ResetAt, se.ResetMean, se.ResetSigma, se.ResetAfter = epoch+1, at.UTC(), mean, priorSigma, after
		se.ResetAltMean = altMean
		_, err = tx.Exec(ctx, sqlMarkReset, c.Key(), name, se.Epoch, se.ResetAt, se.ResetMean, se.ResetSigma, se.ResetAfter,
			se.ResetAltMean)
		return err
	})
	if err != nil {
		return ratings.Season{}, db.MapError(err, "reset season")
	}
	return se, nil
}

// contextMean is ratings.MeanSkill and MeanAltSkill of the context's players, as stored now.
func contextMean(ctx context.Context, tx pgx.Tx, c ratings.Context) (mean, altMean float64, err error) {
	rows, err := tx.Query(ctx, sqlContextSkills, c.Key())
	if err != nil {
		return 0, 0, err
	}
	var rs []ratings.RatedParticipant
	var r ratings.Rating
	_, err = pgx.ForEachRow(rows, []any{&r.Skill, &r.AltSkill, &r.AltSigma}, func() error {
		rs = append(rs, ratings.RatedParticipant{Rating: r})
		return nil
	})
	return ratings.MeanSkill(rs), ratings.MeanAltSkill(rs), err
}

// resetPass resets up to ResetBatch rows of the context behind the season's epoch, in one
// transaction, and says how many it found.
func (s *Store) resetPass(ctx context.Context, c ratings.Context, se ratings.Season) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Every reset season of the context: a row may be more than one reset behind.
		seasons, err := contextSeasons(ctx, tx, c)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sqlRatingsBehind, c.Key(), se.Epoch, ResetBatch)
		if err != nil {
			return err
		}
		var bots []bool
		var ids []string
		var skills, sigmas []float64
		var altSkills, altSigmas []pgtype.Float8 // NULL for zero, as the ratings' writes store them
		var epochs []int64
		var p ratings.Participant
		var r ratings.Rating
		var games int64
		_, err = pgx.ForEachRow(rows, append([]any{&p.Bot, &p.ID}, ratingDest(&r, &games)...), func() error {
			reset := ratings.CatchUp(r, seasons)
			bots, ids = append(bots, p.Bot), append(ids, p.ID)
			skills, sigmas, epochs = append(skills, reset.Skill), append(sigmas, reset.Sigma), append(epochs, reset.Season)
			altSkills, altSigmas = append(altSkills, ratingValue(reset.AltSkill)), append(altSigmas, ratingValue(reset.AltSigma))
			return nil
		})
		if err != nil {
			return err
		}
		n = len(ids)
		if n == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, sqlResetRows, c.Key(), bots, ids, skills, sigmas, epochs, altSkills, altSigmas)
		return err
	})
	return n, err
}

// FinalizeSeason implements ratings.SeasonStore.
func (s *Store) FinalizeSeason(ctx context.Context, c ratings.Context, name string, at time.Time, by ratings.Ranking,
	standings func([]ratings.RatedParticipant) []ratings.Standing) (_ ratings.Season, err error) {
	ctx, done := s.db.Call(ctx, opFinalizeSeason)
	defer done(&err)
	var se ratings.Season
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		list, err := contextSeasons(ctx, tx, c)
		if err != nil {
			return err
		}
		var ok bool
		switch se, ok = findSeason(list, name); {
		case !ok:
			return ratings.SeasonNotFoundError(c, name)
		case !se.FinalAt.IsZero():
			return nil
		case se.Epoch == 0:
			return ratings.SeasonNotStartedError(c, name, se.StartsAt, at)
		}
		ranked, err := leaderboard(ctx, tx, c, 0, by)
		if err != nil {
			return err
		}
		rows := standings(ranked)
		if _, err := tx.Exec(ctx, sqlDeleteStandings, c.Key(), name); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"season_standings"},
			[]string{"context_key", "season", "position", "player_id", "of_players", "tier", "score", "rating"},
			pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
				st := rows[i]
				doc, err := json.Marshal(st.Rating)
				return []any{c.Key(), name, int32(st.Position), st.Player, int32(st.Of), st.Tier, st.Score, doc}, err
			})); err != nil {
			return err
		}
		se.FinalAt = at.UTC()
		_, err = tx.Exec(ctx, sqlMarkFinal, c.Key(), name, se.FinalAt)
		return err
	})
	if err != nil {
		return ratings.Season{}, db.MapError(err, "finalize season")
	}
	return se, nil
}

// scanStandings reads rows of standings.
func scanStandings(rows pgx.Rows) ([]ratings.Standing, error) {
	out := []ratings.Standing{}
	var key string
	var raw []byte
	var st ratings.Standing
	var pos, of int32
	_, err := pgx.ForEachRow(rows, []any{&key, &st.Season, &st.StartsAt, &pos, &st.Player, &of, &st.Tier, &st.Score, &raw}, func() error {
		c, err := ratings.ParseContextKey(key)
		if err != nil {
			return fmt.Errorf("stored context key %q: %w", key, err)
		}
		row := st
		row.Context, row.Position, row.Of, row.Final, row.StartsAt = c, int(pos), int(of), true, st.StartsAt.UTC()
		if err := json.Unmarshal(raw, &row.Rating); err != nil {
			return err
		}
		out = append(out, row)
		return nil
	})
	return out, err
}

// Standings implements ratings.SeasonStore.
func (s *Store) Standings(ctx context.Context, c ratings.Context, name string, offset, limit int) (_ []ratings.Standing, err error) {
	ctx, done := s.db.Call(ctx, opStandings)
	defer done(&err)
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM seasons WHERE context_key = $1 AND name = $2)`, c.Key(), name).Scan(&exists); err != nil {
		return nil, db.MapError(err, "standings")
	}
	if !exists {
		return nil, ratings.SeasonNotFoundError(c, name)
	}
	rows, err := s.pool.Query(ctx, sqlStandings, c.Key(), name, max(offset, 0), max(limit, 0))
	if err != nil {
		return nil, db.MapError(err, "standings")
	}
	out, err := scanStandings(rows)
	return out, db.MapError(err, "standings")
}

// PlayerStandings implements ratings.SeasonStore.
func (s *Store) PlayerStandings(ctx context.Context, playerID string) (_ []ratings.Standing, err error) {
	ctx, done := s.db.Call(ctx, opPlayerStandings)
	defer done(&err)
	rows, err := s.pool.Query(ctx, sqlPlayerStandings, playerID)
	if err != nil {
		return nil, db.MapError(err, "player standings")
	}
	out, err := scanStandings(rows)
	return out, db.MapError(err, "player standings")
}

// Scores implements ratings.SeasonStore.
func (s *Store) Scores(ctx context.Context, c ratings.Context, by ratings.Ranking) (_ []float64, err error) {
	ctx, done := s.db.Call(ctx, opScores)
	defer done(&err)
	ranked, err := leaderboard(ctx, s.pool, c, 0, by)
	if err != nil {
		return nil, db.MapError(err, "scores")
	}
	out := make([]float64, len(ranked))
	for i, rp := range ranked {
		out[len(ranked)-1-i] = by.Score(rp.Rating)
	}
	slices.Sort(out) // ties by id may not be ascending scores' order exactly
	return out, nil
}
