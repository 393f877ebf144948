package ratingsdb

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Store is the Postgres ratings.Store. Its methods are safe for concurrent use.
type Store struct {
	db   *db.DB
	pool *pgxpool.Pool // db's

	// queue holds the results waiting for a committer (commit.go); stopped closes when the
	// committers have stopped.
	queue   *jobQueue
	stopped <-chan struct{}

	// statuses caches the mutator statuses last read or written. RecordResult guesses a
	// result's context from it so that the first round trip can already lock the ratings; the
	// transaction reads the real statuses in the same round trip and starts over when the
	// guess was wrong.
	mu       sync.RWMutex
	statuses map[string]ratings.MutatorStatus

	// known holds rating rows the store has seen exist (bounded by knownRowsMax). A batch
	// claims only the rows of the participants it does not know, before it locks the rows
	// (sqlClaimRows): once the players are rated, it takes no advisory lock.
	known struct {
		sync.Mutex
		rows map[rowKey]struct{}
	}

	// shards is how many rows each bias cell is spread over (see the migration).
	shards int
}

var _ ratings.Store = (*Store)(nil)

// The store's calls, for their deadlines, the in-flight counts and the messages.
var (
	opRecordResult  = db.NewOp("record result")
	opRatings       = db.NewOp("ratings")
	opPlayerRatings = db.NewOp("player ratings")
	opLeaderboard   = db.NewOp("leaderboard")
	opBotMean       = db.NewOp("bot mean")
	opBias          = db.NewOp("bias")
	opPolicy        = db.NewOp("policy")
	opSetMutator    = db.NewOp("set mutator")
	opRebuild       = db.NewLongOp("rebuild")
	opHistory       = db.NewLongOp("history")
	opTunings       = db.NewOp("tunings")
	opSaveTunings   = db.NewOp("save tunings")
	opStoredResult  = db.NewOp("stored result")
	opDeleteResult  = db.NewLongOp("delete result")

	opPutSeason       = db.NewOp("put season")
	opSeasons         = db.NewOp("seasons")
	opResetSeason     = db.NewLongOp("reset season")
	opFinalizeSeason  = db.NewLongOp("finalize season")
	opStandings       = db.NewOp("standings")
	opPlayerStandings = db.NewOp("player standings")
	opScores          = db.NewOp("scores")
	opResultCounts    = db.NewOp("result counts")
	opSaveTuning      = db.NewOp("save tuning")
	opClaimTune       = db.NewOp("claim tune")
)

// defaultBiasShards spreads each bias cell over 64 rows, one per connection (pg_backend_pid()
// modulo 64): a transaction holds its shard's row lock until its COMMIT is flushed, so with
// fewer shards than connections two results commit one after the other. With 16 connections
// and 8 shards, sampling pg_stat_activity under load showed Lock:transactionid as the most
// common wait; 64 covers several replicas' pools. Readers sum at most 64 rows a cell.
const defaultBiasShards = 64

// Options are the store's own; the pool's (deadlines, size) are db.Options.
type Options struct {
	// Committers is how many batches of results are written at once, each on a connection
	// of its own (see commit.go). Default DefaultCommitters; negative turns group commit
	// off: each result is written in a transaction of its own, by its caller.
	Committers int
}

// Open opens the database at url (db.Open, with o) and the store on it, with the default
// Options. It does not migrate: call db.Migrate first.
func Open(ctx context.Context, url string, o db.Options) (*Store, error) {
	d, err := db.Open(ctx, url, o)
	if err != nil {
		return nil, err
	}
	return New(d, Options{}), nil
}

// New is the store on d, which it owns from then on: Shutdown and Close close d (close the
// queue store on the same pool first).
func New(d *db.DB, o Options) *Store {
	s := &Store{db: d, pool: d.Pool(), statuses: make(map[string]ratings.MutatorStatus), shards: defaultBiasShards}
	s.known.rows = make(map[rowKey]struct{})
	n := o.Committers
	if n == 0 {
		n = DefaultCommitters
	}
	if n > 0 {
		s.queue = newQueue()
		s.stopped = s.startCommitters(n)
	} else {
		stopped := make(chan struct{})
		close(stopped)
		s.stopped = stopped
	}
	return s
}

// Close closes the store and its pool, waiting for the calls in flight however long they
// take.
func (s *Store) Close() { _ = s.Shutdown(context.Background()) }

// Shutdown closes the store and its pool (db.DB.Shutdown), the results queued already written
// first. New calls fail at once (Unavailable); the calls in flight may finish until ctx ends,
// then Shutdown cancels them, closes the pool's sockets and returns an error that says what it
// abandoned.
func (s *Store) Shutdown(ctx context.Context) error {
	return s.db.Shutdown(ctx, func() {
		if s.queue != nil {
			s.queue.close() // the results queued already are written first
		}
		<-s.stopped
	})
}

// Pool is the store's connection pool, for health checks and metrics.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Name is "postgres".
func (s *Store) Name() string { return "postgres" }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

// Ready checks that the database answers and that its schema is recent enough (db.DB.Ready),
// for the readiness probe.
func (s *Store) Ready(ctx context.Context) error { return s.db.Ready(ctx) }

// --- reads --------------------------------------------------------------------------------

// ratingColumns are a rating row's columns of ratings.Rating, in the order ratingDest scans.
// All but skill and games may be NULL, which is 0 (see ratingValue and migration 00004).
const ratingColumns = `skill, coalesce(side_offset, 0), coalesce(commander, 0), coalesce(skill_g, 0), coalesce(commander_g, 0), games,
    coalesce(sigma, 0), coalesce(offset_sigma, 0), coalesce(commander_sigma, 0),
    coalesce(last_played, 0), coalesce(season, 0), coalesce(season_games, 0), coalesce(surprise, 0),
    coalesce(alt_skill, 0), coalesce(alt_sigma, 0)`

// ratingValue is how a rating's number other than skill is written: NULL for +0.0, which
// takes no room in the row (a -0.0 is kept as it is, so that what is read back has the same
// bits).
func ratingValue(x float64) pgtype.Float8 {
	return pgtype.Float8{Float64: x, Valid: math.Float64bits(x) != 0}
}

// ratingDest is where a row's ratingColumns are scanned to: r, and games (then r.Games).
func ratingDest(r *ratings.Rating, games *int64) []any {
	return []any{&r.Skill, &r.Offset, &r.Commander, &r.SkillG, &r.CommanderG, games, &r.Sigma, &r.OffsetSigma, &r.CommanderSigma,
		&r.LastPlayed, &r.Season, &r.SeasonGames, &r.Surprise, &r.AltSkill, &r.AltSigma}
}

// countValue is how a rating's count (last played, season, season games) is written: NULL
// for 0, as ratingValue.
func countValue(x int64) pgtype.Int8 { return pgtype.Int8{Int64: x, Valid: x != 0} }

// ratingExtras are the six arrays of round 4's rating columns (last_played, season,
// season_games, surprise, alt_skill, alt_sigma) for the ratings rating gives each row.
func ratingExtras(n int, rating func(i int) ratings.Rating) []any {
	last, season, games, surprise := make([]pgtype.Int8, n), make([]pgtype.Int8, n), make([]pgtype.Int8, n), make([]pgtype.Float8, n)
	altSkill, altSigma := make([]pgtype.Float8, n), make([]pgtype.Float8, n)
	for i := range n {
		r := rating(i)
		last[i], season[i], games[i], surprise[i] = countValue(r.LastPlayed), countValue(r.Season), countValue(int64(r.SeasonGames)), ratingValue(r.Surprise)
		altSkill[i], altSigma[i] = ratingValue(r.AltSkill), ratingValue(r.AltSigma)
	}
	return []any{last, season, games, surprise, altSkill, altSigma}
}

// One primary-key lookup per participant (OFFSET 0 keeps the subquery from being flattened
// into a join that would read the whole context).
const sqlRatings = `
SELECT r.is_bot, r.participant_id, ` + ratingColumns + `
FROM unnest($2::boolean[], $3::text[]) AS u(is_bot, participant_id)
CROSS JOIN LATERAL (
    SELECT * FROM ratings
    WHERE context_key = $1 AND is_bot = u.is_bot AND participant_id = u.participant_id
    OFFSET 0
) AS r`

// Ratings implements ratings.Store.
func (s *Store) Ratings(ctx context.Context, c ratings.Context, ps []ratings.Participant) (_ map[ratings.Participant]ratings.Rating, err error) {
	ctx, done := s.db.Call(ctx, opRatings)
	defer done(&err)
	out := make(map[ratings.Participant]ratings.Rating, len(ps))
	if len(ps) == 0 {
		return out, nil
	}
	bots, ids := participantArrays(ps)
	rows, err := s.pool.Query(ctx, sqlRatings, c.Key(), bots, ids)
	if err != nil {
		return nil, db.MapError(err, "ratings")
	}
	if err := scanRatings(rows, out); err != nil {
		return nil, db.MapError(err, "ratings")
	}
	return out, nil
}

// scanRatings reads rows of (is_bot, participant_id, rating columns) into m.
func scanRatings(rows pgx.Rows, m map[ratings.Participant]ratings.Rating) error {
	var p ratings.Participant
	var r ratings.Rating
	var games int64
	_, err := pgx.ForEachRow(rows, append([]any{&p.Bot, &p.ID}, ratingDest(&r, &games)...), func() error {
		r.Games = int(games)
		m[p] = r
		return nil
	})
	return err
}

const sqlPlayerRatings = `
SELECT context_key, ` + ratingColumns + `
FROM ratings
WHERE participant_id = $1 AND NOT is_bot
ORDER BY context_key`

// PlayerRatings implements ratings.Store; the list is sorted by context key.
func (s *Store) PlayerRatings(ctx context.Context, playerID string) (_ []ratings.ContextRating, err error) {
	ctx, done := s.db.Call(ctx, opPlayerRatings)
	defer done(&err)
	rows, err := s.pool.Query(ctx, sqlPlayerRatings, playerID)
	if err != nil {
		return nil, db.MapError(err, "player ratings")
	}
	var out []ratings.ContextRating
	var key string
	var r ratings.Rating
	var games int64
	_, err = pgx.ForEachRow(rows, append([]any{&key}, ratingDest(&r, &games)...), func() error {
		c, err := ratings.ParseContextKey(key)
		if err != nil {
			return fmt.Errorf("stored context key %q: %w", key, err)
		}
		r.Games = int(games)
		out = append(out, ratings.ContextRating{Context: c, Rating: r})
		return nil
	})
	if err != nil {
		return nil, db.MapError(err, "player ratings")
	}
	return out, nil
}

// The order is ratings.Ranking.Score: skill less $3 standard deviations, $4 standing for a
// sigma of 0, grown by the idle drift ($7 a day, to the Unix second $8) as Ranking.Sigma
// grows it, operation by operation, so that both compute the same bits. With $3 = 0 it is
// the skill (x - 0 * s = x for finite s). $5 > 0 keeps the ratings of that season epoch with
// at least $6 season games. $2 NULL is no limit.
const sqlLeaderboard = `
SELECT participant_id, ` + ratingColumns + `
FROM ratings
WHERE context_key = $1 AND NOT is_bot AND ($5::bigint = 0 OR (coalesce(season, 0) = $5 AND coalesce(season_games, 0) >= $6::bigint))
ORDER BY skill - $3::float8 * (CASE
    WHEN $7::float8 > 0 AND coalesce(last_played, 0) > 0 AND $8::bigint > last_played
    THEN sqrt((CASE WHEN sigma > 0 THEN sigma ELSE $4::float8 END) * (CASE WHEN sigma > 0 THEN sigma ELSE $4::float8 END)
        + $7::float8 * (($8::bigint - last_played)::float8 / 86400))
    ELSE CASE WHEN sigma > 0 THEN sigma ELSE $4::float8 END
  END) DESC, participant_id
LIMIT $2`

// Leaderboard implements ratings.Store.
func (s *Store) Leaderboard(ctx context.Context, c ratings.Context, limit int, by ratings.Ranking) (_ []ratings.RatedParticipant, err error) {
	ctx, done := s.db.Call(ctx, opLeaderboard)
	defer done(&err)
	if limit <= 0 {
		return []ratings.RatedParticipant{}, nil
	}
	out, err := leaderboard(ctx, s.pool, c, limit, by)
	return out, db.MapError(err, "leaderboard")
}

// leaderboard is the ratings of c that by includes, best first: the first limit of them, all
// with limit 0.
func leaderboard(ctx context.Context, q querier, c ratings.Context, limit int, by ratings.Ranking) ([]ratings.RatedParticipant, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	rows, err := q.Query(ctx, sqlLeaderboard, c.Key(), lim, by.K, by.PriorSigma, by.Season, by.Placed, by.DriftSq, by.Now)
	if err != nil {
		return nil, err
	}
	out := []ratings.RatedParticipant{}
	var rp ratings.RatedParticipant
	var games int64
	r := &rp.Rating
	_, err = pgx.ForEachRow(rows, append([]any{&rp.Participant.ID}, ratingDest(r, &games)...), func() error {
		r.Games = int(games)
		out = append(out, rp)
		return nil
	})
	return out, err
}

// The cell and the side pair's total (map ” and size 0), each the sum of its shards.
const sqlBias = `
SELECT map, size, sum(wins), sum(games), sum(presence), sum(presence_weight), sum(newcomer), sum(newcomer_weight),
    sum(scale), sum(scale_weight), sum(alt_scale), sum(alt_scale_weight), sum(evidence)
FROM bias_cells
WHERE context_key = $1 AND side_a = $2 AND side_b = $3 AND ((map = $4 AND size = $5) OR (map = '' AND size = 0))
GROUP BY map, size`

// Bias implements ratings.Store.
func (s *Store) Bias(ctx context.Context, c ratings.Context, k ratings.BiasKey) (_ ratings.BiasTable, err error) {
	ctx, done := s.db.Call(ctx, opBias)
	defer done(&err)
	rows, err := s.pool.Query(ctx, sqlBias, c.Key(), k.SideA, k.SideB, k.Map, int32(k.Size))
	if err != nil {
		return ratings.BiasTable{}, db.MapError(err, "bias")
	}
	var cell, total ratings.BiasCell
	var hasCell, hasTotal bool
	var m string
	var size int32
	var b ratings.BiasCell
	_, err = pgx.ForEachRow(rows, []any{&m, &size, &b.Wins, &b.Games, &b.Terms.Presence, &b.Terms.PresenceWeight,
		&b.Terms.Newcomer, &b.Terms.NewcomerWeight, &b.Terms.Scale, &b.Terms.ScaleWeight,
		&b.Terms.AltScale, &b.Terms.AltScaleWeight, &b.Terms.Evidence}, func() error {
		if m == "" {
			total, hasTotal = b, true
		} else {
			cell, hasCell = b, true
		}
		return nil
	})
	if err != nil {
		return ratings.BiasTable{}, db.MapError(err, "bias")
	}
	var t ratings.BiasTable
	if hasCell {
		if err := t.Set(ratings.BiasEntry{Key: k, BiasCell: cell}); err != nil {
			return ratings.BiasTable{}, db.MapError(err, "bias")
		}
	}
	if hasTotal {
		if err := t.SetTotal(k, total); err != nil { // after Set, which adds the cell to the total
			return ratings.BiasTable{}, db.MapError(err, "bias")
		}
	}
	return t, nil
}

const sqlBotSkills = `
SELECT skill FROM ratings WHERE context_key = $1 AND is_bot ORDER BY participant_id`

// BotMean implements ratings.Store. The weights are computed and summed in Go, in the order
// of the bots' names, exactly as the in-memory store does.
func (s *Store) BotMean(ctx context.Context, c ratings.Context) (_ float64, _ int, err error) {
	ctx, done := s.db.Call(ctx, opBotMean)
	defer done(&err)
	rows, err := s.pool.Query(ctx, sqlBotSkills, c.Key())
	if err != nil {
		return 0, 0, db.MapError(err, "bot mean")
	}
	skills, err := pgx.CollectRows(rows, pgx.RowTo[float64])
	if err != nil {
		return 0, 0, db.MapError(err, "bot mean")
	}
	mean, n := ratings.MeanWeight(skills)
	return mean, n, nil
}

// --- the mutator policy -------------------------------------------------------------------

const sqlPolicy = `SELECT name, status FROM mutators ORDER BY name`

// Policy implements ratings.Store.
func (s *Store) Policy(ctx context.Context) (_ *ratings.MutatorPolicy, err error) {
	ctx, done := s.db.Call(ctx, opPolicy)
	defer done(&err)
	return s.policy(ctx, s.pool)
}

// querier is what the store reads through: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) policy(ctx context.Context, q querier) (*ratings.MutatorPolicy, error) {
	rows, err := q.Query(ctx, sqlPolicy)
	if err != nil {
		return nil, db.MapError(err, "policy")
	}
	statuses := map[string]ratings.MutatorStatus{}
	var name, status string
	if _, err := pgx.ForEachRow(rows, []any{&name, &status}, func() error {
		st, err := parseStatus(status)
		statuses[name] = st
		return err
	}); err != nil {
		return nil, db.MapError(err, "policy")
	}
	p, err := policyOf(statuses)
	if err != nil {
		return nil, db.MapError(err, "policy")
	}
	s.remember(statuses)
	return p, nil
}

// policyOf builds a policy from stored statuses.
func policyOf(statuses map[string]ratings.MutatorStatus) (*ratings.MutatorPolicy, error) {
	p := &ratings.MutatorPolicy{}
	for name, st := range statuses {
		var err error
		switch st {
		case ratings.MutatorGameplay:
			err = p.Set(name, true)
		case ratings.MutatorNeutral:
			err = p.Set(name, false)
		default:
			p.Observe(name)
		}
		if err != nil {
			return nil, fmt.Errorf("stored mutator %q: %w", name, err)
		}
	}
	return p, nil
}

func parseStatus(s string) (ratings.MutatorStatus, error) {
	for _, st := range []ratings.MutatorStatus{ratings.MutatorUnknown, ratings.MutatorGameplay, ratings.MutatorNeutral} {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("stored mutator status %q is unknown", s)
}

// remember updates the status cache.
func (s *Store) remember(statuses map[string]ratings.MutatorStatus) {
	s.mu.Lock()
	for n, st := range statuses {
		s.statuses[n] = st
	}
	s.mu.Unlock()
}

const sqlSetMutator = `
INSERT INTO mutators (name, status) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET status = excluded.status, updated_at = now()
RETURNING name, status`

// SetMutator implements ratings.Store.
func (s *Store) SetMutator(ctx context.Context, name string, affectsGameplay bool) (_ ratings.MutatorInfo, err error) {
	ctx, done := s.db.Call(ctx, opSetMutator)
	defer done(&err)
	var check ratings.MutatorPolicy
	if err := check.Set(name, affectsGameplay); err != nil {
		return ratings.MutatorInfo{}, err
	}
	want := check.Mutators()[0]
	var stored, status string
	if err := s.pool.QueryRow(ctx, sqlSetMutator, want.Name, want.Status.String()).Scan(&stored, &status); err != nil {
		return ratings.MutatorInfo{}, db.MapError(err, "set mutator")
	}
	st, err := parseStatus(status)
	if err != nil {
		return ratings.MutatorInfo{}, db.MapError(err, "set mutator")
	}
	s.remember(map[string]ratings.MutatorStatus{stored: st})
	return ratings.MutatorInfo{Name: stored, Status: st}, nil
}

// participantArrays splits participants into the two arrays the SQL unnests.
func participantArrays(ps []ratings.Participant) ([]bool, []string) {
	bots := make([]bool, len(ps))
	ids := make([]string, len(ps))
	for i, p := range ps {
		bots[i], ids[i] = p.Bot, p.ID
	}
	return bots, ids
}
