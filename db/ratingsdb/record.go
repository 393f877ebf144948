package ratingsdb

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The statements of a batch of results (see commit.go), in the order they are sent. The first
// round trip begins the transaction and sends everything up to the bias reads; the second
// sends the writes and COMMIT. Each takes arrays: one statement for the whole batch.
const (
	// Results of a game type share its advisory lock; Rebuild takes it exclusively. The batch
	// takes those of its game types in one fixed order.
	sqlLockGameTypes = `SELECT pg_advisory_xact_lock_shared(2, hashtext(g)) FROM unnest($1::text[]) AS g`

	// The results already stored under the batch's match ids. Two transactions that record
	// the same new match id at once both get past this; the primary key makes the second wait
	// for the first and fail (23505), and its retry finds the first one's match.
	sqlFindMatches = `
SELECT match_id, body_hash, response, context_key FROM matches WHERE match_id = ANY($1::text[])`

	sqlMutatorStatuses = `SELECT name, status FROM mutators WHERE name = ANY($1::text[])`

	// The rows of the participants the store has not seen yet (see Store.known) claimed, before
	// they are looked for: an advisory lock for each (rowClaims), taken in the order of the
	// keys, so that two batches that meet the same newcomer at once run one after the other.
	// The second's lock (the next statement, which sees what committed before it began) finds
	// the first's row, where it would otherwise insert the newcomer too and fail (23505). The
	// claims write nothing; a batch's newcomers are written once, with their ratings.
	sqlClaimRows = `SELECT pg_advisory_xact_lock($1::integer, k) FROM unnest($2::integer[]) AS k`

	// The participants' rows that exist, locked one by one in the order of the arrays: one
	// fixed order (context key, then players before bots, then id, all in byte order:
	// rowKey.compare), the same in every transaction, so two batches over the same players
	// neither deadlock nor lose an update. The locking subquery cannot be flattened into a
	// join, so each row is one primary-key lookup whatever the statistics say. A participant
	// without a row is a newcomer: nothing is written for him before his row is inserted,
	// once, with its rating (see sqlWriteResults).
	sqlLockRatings = `
SELECT r.context_key, r.is_bot, r.participant_id, ` + ratingColumns + `
FROM unnest($1::text[], $2::boolean[], $3::text[]) AS u(context_key, is_bot, participant_id)
CROSS JOIN LATERAL (
    SELECT * FROM ratings
    WHERE context_key = u.context_key AND is_bot = u.is_bot AND participant_id = u.participant_id
    FOR UPDATE
) AS r`

	// For each of the batch's bias cells: the cell and its side pair's total (the row with map
	// '' and size 0), each the sum of its shards: two short index ranges per cell however many
	// maps and sizes the pair has.
	sqlBiasCells = `
SELECT u.n, c.map, c.size, c.wins, c.games, c.presence, c.presence_weight, c.newcomer, c.newcomer_weight, c.scale, c.scale_weight,
    c.alt_scale, c.alt_scale_weight, c.evidence
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::integer[]) WITH ORDINALITY AS u(context_key, side_a, side_b, map, size, n)
CROSS JOIN LATERAL (
    SELECT b.map, b.size, sum(b.wins) AS wins, sum(b.games) AS games,
        sum(b.presence) AS presence, sum(b.presence_weight) AS presence_weight, sum(b.newcomer) AS newcomer,
        sum(b.newcomer_weight) AS newcomer_weight, sum(b.scale) AS scale, sum(b.scale_weight) AS scale_weight,
        sum(b.alt_scale) AS alt_scale, sum(b.alt_scale_weight) AS alt_scale_weight, sum(b.evidence) AS evidence
    FROM bias_cells AS b
    WHERE b.context_key = u.context_key AND b.side_a = u.side_a AND b.side_b = u.side_b
      AND ((b.map = u.map AND b.size = u.size) OR (b.map = '' AND b.size = 0))
    GROUP BY b.map, b.size
) AS c`

	// The second round trip's writes in one statement (each data-modifying CTE runs once and to
	// completion): the newcomers' ratings, those of the participants whose rows were locked,
	// the matches with their responses, and the bias increments.
	//
	// The newcomers' rows (the rows the lock did not find) are inserted first, in lock order,
	// without ON CONFLICT, and nothing else is written until they are (the other inserts' WHERE
	// reads their count). The batch's claims keep other batches from inserting them, but not
	// one that believed the row to exist (deleted since, by a rebuild): if another transaction
	// inserted or updated the row meanwhile, the insert waits for it, then the primary key
	// fails this one (23505 on ratings_pkey) and the batch runs again, claiming all its rows.
	//
	// No two batches wait for each other, but two over the same new match ids in different
	// orders (one client's retries racing: the deadlock detector ends one, which runs again,
	// to find the other's matches). What a batch waits for is, in order: its claims, by
	// key; the rows it locks, by key; in this statement newcomers' rows, by key, then match
	// ids, then bias cells, by key (those of its connection's shard). The claims and locks it
	// holds block no statement of the second round trip (an advisory lock blocks only another
	// claim, a row lock without an update no insert), so a transaction in its second round
	// trip waits only on one in its second round trip, at the same step or further on, and at
	// a larger key where the step is in key order; in the first, only on one at the same step
	// (a larger key) or further on. (A newcomer's empty row inserted before the lock, as the
	// batch once did, can hold up a transaction's second round trip from a first one, and
	// deadlocked with inserting the newcomers with their ratings.)
	//
	// The ratings that existed are locked rows, so each takes the DO UPDATE path, found through
	// the primary key one by one (a plain UPDATE ... FROM unnest was planned as a scan of the
	// whole context once the table was large: 75 results/s against 10,000 rated players).
	//
	// The matches are inserted in the batch's order, which gives them their sequence numbers:
	// the order a rebuild replays them in is the order they were applied. The bias increments
	// are summed per cell in Go (a statement may not update a row twice) and added in the
	// connection's shard.
	sqlWriteResults = `
WITH created AS (
    INSERT INTO ratings (context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
        sigma, offset_sigma, commander_sigma, last_played, season, season_games, surprise, alt_skill, alt_sigma)
    SELECT u.context_key, u.game_type, u.is_bot, u.participant_id, u.skill, u.side_offset, u.commander, u.skill_g, u.commander_g, u.games,
        u.sigma, u.offset_sigma, u.commander_sigma, u.last_played, u.season, u.season_games, u.surprise, u.alt_skill, u.alt_sigma
    FROM unnest($35::text[], $36::text[], $37::boolean[], $38::text[], $39::float8[], $40::float8[], $41::float8[], $42::float8[], $43::float8[], $44::bigint[],
        $45::float8[], $46::float8[], $47::float8[], $54::bigint[], $55::bigint[], $56::bigint[], $57::float8[], $58::float8[], $59::float8[])
      WITH ORDINALITY AS u(context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
        sigma, offset_sigma, commander_sigma, last_played, season, season_games, surprise, alt_skill, alt_sigma, n)
    ORDER BY u.n
    RETURNING 1
), updated AS (
    INSERT INTO ratings AS r (context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
        sigma, offset_sigma, commander_sigma, last_played, season, season_games, surprise, alt_skill, alt_sigma)
    SELECT u.*
    FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[], $10::bigint[],
        $11::float8[], $12::float8[], $13::float8[], $48::bigint[], $49::bigint[], $50::bigint[], $51::float8[], $52::float8[], $53::float8[])
      AS u(context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
        sigma, offset_sigma, commander_sigma, last_played, season, season_games, surprise, alt_skill, alt_sigma)
    WHERE (SELECT count(*) FROM created) >= 0
    ON CONFLICT (context_key, is_bot, participant_id) DO UPDATE
    SET skill = excluded.skill, side_offset = excluded.side_offset, commander = excluded.commander,
        skill_g = excluded.skill_g, commander_g = excluded.commander_g, games = excluded.games,
        sigma = excluded.sigma, offset_sigma = excluded.offset_sigma, commander_sigma = excluded.commander_sigma,
        last_played = excluded.last_played, season = excluded.season, season_games = excluded.season_games, surprise = excluded.surprise,
        alt_skill = excluded.alt_skill, alt_sigma = excluded.alt_sigma, updated_at = now()
    RETURNING 1
), stored AS (
    INSERT INTO matches (match_id, game_type, context_key, body_hash, result, response)
    SELECT u.match_id, u.game_type, u.context_key, u.body_hash, u.result::json, u.response
    FROM unnest($14::text[], $15::text[], $16::text[], $17::bytea[], $18::text[], $19::bytea[]) WITH ORDINALITY
      AS u(match_id, game_type, context_key, body_hash, result, response, n)
    WHERE (SELECT count(*) FROM created) >= 0
    ORDER BY u.n
    RETURNING 1
), bumped AS (
    INSERT INTO bias_cells AS b (context_key, side_a, side_b, map, size, shard, game_type, wins, games,
        presence, presence_weight, newcomer, newcomer_weight, scale, scale_weight, alt_scale, alt_scale_weight, evidence)
    SELECT u.context_key, u.side_a, u.side_b, u.map, u.size, pg_backend_pid() % $20, u.game_type, u.wins, u.games,
        u.presence, u.presence_weight, u.newcomer, u.newcomer_weight, u.scale, u.scale_weight, u.alt_scale, u.alt_scale_weight, u.evidence
    FROM unnest($21::text[], $22::text[], $23::text[], $24::text[], $25::integer[], $26::text[], $27::float8[], $28::float8[],
        $29::float8[], $30::float8[], $31::float8[], $32::float8[], $33::float8[], $34::float8[], $60::float8[], $61::float8[], $62::float8[])
      WITH ORDINALITY AS u(context_key, side_a, side_b, map, size, game_type, wins, games,
        presence, presence_weight, newcomer, newcomer_weight, scale, scale_weight, alt_scale, alt_scale_weight, evidence, n)
    WHERE (SELECT count(*) FROM stored) >= 0
    ORDER BY u.n
    ON CONFLICT (context_key, side_a, side_b, map, size, shard)
    DO UPDATE SET wins = b.wins + excluded.wins, games = b.games + excluded.games,
        presence = b.presence + excluded.presence, presence_weight = b.presence_weight + excluded.presence_weight,
        newcomer = b.newcomer + excluded.newcomer, newcomer_weight = b.newcomer_weight + excluded.newcomer_weight,
        scale = b.scale + excluded.scale, scale_weight = b.scale_weight + excluded.scale_weight,
        alt_scale = b.alt_scale + excluded.alt_scale, alt_scale_weight = b.alt_scale_weight + excluded.alt_scale_weight,
        evidence = b.evidence + excluded.evidence
    RETURNING 1
)
SELECT (SELECT count(*) FROM created) + (SELECT count(*) FROM updated), (SELECT count(*) FROM stored), (SELECT count(*) FROM bumped)`

	sqlObserveMutators = `
INSERT INTO mutators (name)
SELECT name FROM unnest($1::text[]) AS name ORDER BY name
ON CONFLICT (name) DO NOTHING`
)

// maxAttempts bounds how often a result is put in a batch: again after a deadlock or a
// serialization failure (which the lock order should rule out), a match id or a newcomer's
// rating row inserted by another batch at the same time, or when the context it guessed from
// its cache of the mutator policy was wrong.
const maxAttempts = 6

// errStaleGuess says that the cached mutator statuses gave another context than the stored
// ones: the result is queued again, and the cache was refreshed meanwhile.
var errStaleGuess = errors.New("db: the cached mutator policy was stale")

// RecordResult implements ratings.Store. The result joins a batch (see commit.go) written in
// one transaction in two round trips, each one pipelined batch of statements:
//
//  1. BEGIN; the game types' shared advisory locks; the results already stored under the
//     match ids; the statuses of the results' mutators (if any); the participants' rating
//     rows, locked in a fixed order; the bias cells of the results.
//  2. After apply, result by result: the mutators seen for the first time; the ratings
//     (newcomers' rows inserted); the match rows; the bias increments; COMMIT.
//
// A replay or a conflict is answered after the first round trip. RecordResult returns once
// its batch has committed; if ctx ends first, the result may or may not have been stored: the
// error is Unavailable, and the client's retry is answered as a replay if it was.
//
// Results that share a participant are serialized, in the order they are accepted, exactly as
// a rebuild replays them: inside a batch by the order of application, between batches by the
// row locks. Results of concurrent batches read the bias table as committed when their first
// round trip ran: two such results of the same side pair do not see each other's bias
// update, where a rebuild (one result after the other) makes the later one see the earlier's.
// The difference is one game in a cell's smoothed win rate, for that result's prediction and
// update only; a rebuild removes it. The in-memory store, which applies results one at a
// time, has no such lag.
func (s *Store) RecordResult(ctx context.Context, req ratings.RecordRequest, apply ratings.ApplyFunc) (_ ratings.Recorded, err error) {
	ctx, done := s.db.Call(ctx, opRecordResult)
	defer done(&err)
	if err := req.Result.Validate(); err != nil {
		return ratings.Recorded{}, err
	}
	p, err := prepare(req)
	if err != nil {
		return ratings.Recorded{}, db.MapError(err, "record result")
	}
	return s.record(ctx, p, apply)
}

// prepared is what RecordResult computes once, outside any transaction.
type prepared struct {
	req      ratings.RecordRequest
	gameType string   // canonical
	mutators []string // canonical, de-duplicated: the ones whose status decides the context
	ps       []ratings.Participant
	bias     ratings.BiasKey
	doc      []byte // the result as stored
}

func prepare(req ratings.RecordRequest) (*prepared, error) {
	r := req.Result
	c, err := ratings.NewContext(r.GameType, r.Mutators)
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(toDoc(r))
	if err != nil {
		return nil, err
	}
	return &prepared{req: req, gameType: c.GameType, mutators: c.Mutators, ps: ratings.ResultParticipants(r),
		bias: ratings.ResultBiasKey(r), doc: doc}, nil
}

// guess is the result's context by the cached mutator statuses.
func (s *Store) guess(p *prepared) (ratings.Context, error) {
	statuses := make(map[string]ratings.MutatorStatus, len(p.mutators))
	s.mu.RLock()
	for _, m := range p.mutators {
		statuses[m] = s.statuses[m]
	}
	s.mu.RUnlock()
	return contextOf(p, statuses)
}

// contextOf is the result's context by the given statuses (those of its mutators at least).
func contextOf(p *prepared, statuses map[string]ratings.MutatorStatus) (ratings.Context, error) {
	own := make(map[string]ratings.MutatorStatus, len(p.mutators))
	for _, m := range p.mutators {
		own[m] = statuses[m]
	}
	pol, err := policyOf(own)
	if err != nil {
		return ratings.Context{}, err
	}
	c, _, err := pol.Context(p.gameType, p.mutators)
	return c, err
}

// rowKey is a rating row: a participant in a context.
type rowKey struct {
	ctx string
	p   ratings.Participant
}

// compare is the order rows are locked in.
func (k rowKey) compare(o rowKey) int {
	return cmp.Or(cmp.Compare(k.ctx, o.ctx), k.p.Compare(o.p))
}

// claim is the key of the row's advisory lock (sqlClaimRows): FNV-1a of its key.
func (k rowKey) claim() int32 {
	h := fnv.New32a()
	bot := byte(0)
	if k.p.Bot {
		bot = 1
	}
	h.Write([]byte(k.ctx))
	h.Write([]byte{0, bot})
	h.Write([]byte(k.p.ID))
	return int32(h.Sum32())
}

// cellKey is a bias cell of a context, or with Map "" and Size 0 its side pair's total.
type cellKey struct {
	ctx string
	k   ratings.BiasKey
}

func (k cellKey) pair() cellKey {
	return cellKey{k.ctx, ratings.BiasKey{SideA: k.k.SideA, SideB: k.k.SideB}}
}

// resultDoc is a ratings.Result as stored in matches.result: named like the API's fields, so
// the history reads well in psql, and with every number exact.
type resultDoc struct {
	MatchID   string    `json:"match_id"`
	GameType  string    `json:"game_type"`
	Mutators  []string  `json:"mutators,omitempty"`
	Map       string    `json:"map"`
	DurationS float64   `json:"duration_s"`
	Teams     []teamDoc `json:"teams"`
	Winner    *int      `json:"winner"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

type teamDoc struct {
	Side    string      `json:"side"`
	Players []playerDoc `json:"players"`
}

type playerDoc struct {
	ID         string  `json:"id,omitempty"`
	Bot        string  `json:"bot,omitempty"`
	JoinedS    float64 `json:"joined_s"`
	LeftS      float64 `json:"left_s"`
	CommanderS float64 `json:"commander_s,omitempty"`
}

func toDoc(r ratings.Result) resultDoc {
	d := resultDoc{MatchID: r.MatchID, GameType: r.GameType, Mutators: r.Mutators, Map: r.Map, DurationS: r.DurationS, Winner: r.Winner,
		EndedAt: r.EndedAt}
	for _, t := range r.Teams {
		td := teamDoc{Side: t.Side, Players: make([]playerDoc, len(t.Players))}
		for i, p := range t.Players {
			td.Players[i] = playerDoc(p)
		}
		d.Teams = append(d.Teams, td)
	}
	return d
}

func (d resultDoc) result() ratings.Result {
	r := ratings.Result{MatchID: d.MatchID, GameType: d.GameType, Mutators: d.Mutators, Map: d.Map, DurationS: d.DurationS, Winner: d.Winner,
		EndedAt: d.EndedAt}
	for _, t := range d.Teams {
		tm := ratings.Team{Side: t.Side, Players: make([]ratings.Player, len(t.Players))}
		for i, p := range t.Players {
			tm.Players[i] = ratings.Player(p)
		}
		r.Teams = append(r.Teams, tm)
	}
	return r
}
