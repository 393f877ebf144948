package db

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"matchmaker/internal/apperr"
	"matchmaker/internal/ratings"
)

// The statements of RecordResult, in the order it sends them. The first round trip begins
// the transaction and sends everything up to the bias read; the second sends the writes and
// COMMIT.
const (
	// Results of a game type share this advisory lock; Rebuild takes it exclusively. With it,
	// the result stored under the match id, if any (one row, NULL when there is none). Two
	// transactions that record the same new match id at once both get past this; the
	// primary key makes the second wait for the first and fail (23505), and its retry finds
	// the first one's match.
	sqlLockFindMatch = `
SELECT m.body_hash, m.response, m.context_key
FROM (SELECT pg_advisory_xact_lock_shared(2, hashtext($2))) AS game_type_lock
LEFT JOIN matches AS m ON m.match_id = $1`

	sqlMutatorStatuses = `SELECT name, status FROM mutators WHERE name = ANY($1::text[])`

	// Every participant gets a row, inserted in the participants' order; RETURNING lists the
	// ones that were new.
	sqlEnsureRatings = `
INSERT INTO ratings (context_key, is_bot, participant_id, game_type)
SELECT $1, u.is_bot, u.participant_id, $2
FROM unnest($3::boolean[], $4::text[]) WITH ORDINALITY AS u(is_bot, participant_id, n)
ORDER BY u.n
ON CONFLICT (context_key, is_bot, participant_id) DO NOTHING
RETURNING is_bot, participant_id`

	// The rows are locked one by one in the order of the arrays: one fixed order (players
	// before bots, then by id in byte order: ratings.Participant.Compare), so two results over
	// the same players neither deadlock nor lose an update. The locking subquery cannot be
	// flattened into a join, so each row is one primary-key lookup whatever the statistics say.
	sqlLockRatings = `
SELECT r.is_bot, r.participant_id, r.skill, r.side_offset, r.commander, r.skill_g, r.commander_g, r.games
FROM unnest($2::boolean[], $3::text[]) AS u(is_bot, participant_id)
CROSS JOIN LATERAL (
    SELECT * FROM ratings
    WHERE context_key = $1 AND is_bot = u.is_bot AND participant_id = u.participant_id
    FOR UPDATE
) AS r`

	// The result's cell and its side pair's total (the row with map '' and size 0), each the
	// sum of its shards: two short index ranges however many maps and sizes the pair has.
	sqlBiasCells = `
SELECT map, size, sum(wins), sum(games)
FROM bias_cells
WHERE context_key = $1 AND side_a = $2 AND side_b = $3
  AND ((map = $4 AND size = $5) OR (map = '' AND size = 0))
GROUP BY map, size`

	// The second round trip's writes in one statement (each data-modifying CTE runs once and to
	// completion): the participants' ratings, the match with its response, and the bias
	// increments. The ratings are locked rows, so every one takes the DO UPDATE path, found
	// through the primary key one by one (a plain UPDATE ... FROM unnest was planned as a scan
	// of the whole context once the table was large: 75 results/s against 10,000 rated
	// players). The result's cell and its side pair's total (map '', size 0) both take the bias
	// increment, in the connection's shard; an outcome without one ($21 = 0) adds nothing.
	// One statement instead of three saves Postgres two statements' overhead per result.
	sqlWriteResult = `
WITH updated AS (
    INSERT INTO ratings AS r (context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games)
    SELECT $1, $2, u.*
    FROM unnest($3::boolean[], $4::text[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[], $10::bigint[])
      AS u(is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games)
    ON CONFLICT (context_key, is_bot, participant_id) DO UPDATE
    SET skill = excluded.skill, side_offset = excluded.side_offset, commander = excluded.commander,
        skill_g = excluded.skill_g, commander_g = excluded.commander_g, games = excluded.games, updated_at = now()
    RETURNING 1
), stored AS (
    INSERT INTO matches (match_id, game_type, context_key, body_hash, result, response)
    VALUES ($11, $2, $1, $12, $13, $14)
    RETURNING 1
), bumped AS (
    INSERT INTO bias_cells AS b (context_key, side_a, side_b, map, size, shard, game_type, wins, games)
    SELECT $1, $15, $16, cell.map, cell.size, pg_backend_pid() % $19, $2, $20, $21
    FROM (VALUES ($17::text, $18::integer), ('', 0)) AS cell(map, size)
    WHERE $21::float8 > 0
    ON CONFLICT (context_key, side_a, side_b, map, size, shard)
    DO UPDATE SET wins = b.wins + excluded.wins, games = b.games + excluded.games
    RETURNING 1
)
SELECT (SELECT count(*) FROM updated), (SELECT count(*) FROM stored), (SELECT count(*) FROM bumped)`

	// Rows inserted for participants the outcome did not update (an ApplyFunc may skip some).
	sqlDropRatings = `
DELETE FROM ratings AS r
USING unnest($2::boolean[], $3::text[]) AS u(is_bot, participant_id)
WHERE r.context_key = $1 AND r.is_bot = u.is_bot AND r.participant_id = u.participant_id`

	sqlObserveMutators = `
INSERT INTO mutators (name)
SELECT name FROM unnest($1::text[]) AS name ORDER BY name
ON CONFLICT (name) DO NOTHING`
)

// maxAttempts bounds how often RecordResult runs its transaction: again after a deadlock or
// a serialization failure (which the lock order should rule out), or when the context it
// guessed from its cache of the mutator policy was wrong.
const maxAttempts = 6

// errStaleGuess says that the cached mutator statuses gave another context than the stored
// ones: the transaction is run again with the cache refreshed.
var errStaleGuess = errors.New("db: the cached mutator policy was stale")

// applyError carries the ApplyFunc's error through the retry loop untouched.
type applyError struct{ err error }

func (e applyError) Error() string { return e.err.Error() }

// RecordResult implements ratings.Store. One transaction in two round trips, each one
// pipelined batch:
//
//  1. BEGIN; the game type's shared advisory lock and the match lookup; the statuses of the
//     result's mutators (if it has any); the participants' rating rows ensured, then locked
//     in a fixed order; the side pair's bias cells.
//  2. After apply: the ratings; the mutators seen for the first time; the match row; the
//     bias shard's increment; COMMIT.
//
// A replay or a conflict is answered after the first round trip (and a ROLLBACK). If the
// context ends while COMMIT is under way, the result may or may not have been stored: the
// error is Unavailable, and the client's retry is answered as a replay if it was.
//
// Results that share a participant are serialized by the row locks, in the order they are
// accepted, exactly as a rebuild replays them. Results that share none run concurrently, and
// each reads the bias table as committed when its first round trip ran: two such results of
// the same side pair committing at once do not see each other's bias update, where a rebuild
// (one result after the other) makes the later one see the earlier's. The difference is one
// game in a cell's smoothed win rate, for that result's prediction and update only; a rebuild
// removes it. The in-memory store, which applies results one at a time, has no such lag.
func (s *Store) RecordResult(ctx context.Context, req ratings.RecordRequest, apply ratings.ApplyFunc) (ratings.Recorded, error) {
	if err := req.Result.Validate(); err != nil {
		return ratings.Recorded{}, err
	}
	p, err := prepare(req)
	if err != nil {
		return ratings.Recorded{}, mapError(err, "record result")
	}
	for attempt := 1; ; attempt++ {
		rec, err := s.record(ctx, p, apply)
		if err == nil {
			return rec, nil
		}
		var ae applyError
		if errors.As(err, &ae) {
			return ratings.Recorded{}, ae.err
		}
		if attempt == maxAttempts || !(retryable(err) || errors.Is(err, errStaleGuess)) {
			if errors.Is(err, errStaleGuess) { // the policy keeps changing under us
				return ratings.Recorded{}, apperr.Wrap(apperr.Unavailable, err, "db: record result: the mutator policy kept changing, try again")
			}
			return ratings.Recorded{}, mapError(err, "record result")
		}
		if !errors.Is(err, errStaleGuess) {
			// Back off a little, at random, so the same transactions do not collide again.
			t := time.NewTimer(time.Duration(rand.IntN(attempt*2000)) * time.Microsecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return ratings.Recorded{}, mapError(ctx.Err(), "record result")
			case <-t.C:
			}
		}
	}
}

// prepared is what RecordResult computes once, outside its transaction.
type prepared struct {
	req      ratings.RecordRequest
	gameType string   // canonical
	mutators []string // canonical, de-duplicated: the ones whose status decides the context
	ps       []ratings.Participant
	bots     []bool
	ids      []string
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
	p := &prepared{req: req, gameType: c.GameType, mutators: c.Mutators, ps: ratings.ResultParticipants(r), bias: ratings.ResultBiasKey(r), doc: doc}
	p.bots, p.ids = participantArrays(p.ps)
	return p, nil
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

func contextOf(p *prepared, statuses map[string]ratings.MutatorStatus) (ratings.Context, error) {
	pol, err := policyOf(statuses)
	if err != nil {
		return ratings.Context{}, err
	}
	c, _, err := pol.Context(p.gameType, p.mutators)
	return c, err
}

// record runs the transaction once.
func (s *Store) record(ctx context.Context, p *prepared, apply ratings.ApplyFunc) (rec ratings.Recorded, err error) {
	guess, err := s.guess(p)
	if err != nil {
		return rec, err
	}
	key := guess.Key()
	r := &p.req.Result

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return rec, err
	}
	defer release(ctx, conn)

	var (
		found      bool
		storedHash []byte
		storedResp []byte
		storedKey  string
		statuses   = make(map[string]ratings.MutatorStatus, len(p.mutators))
		inserted   []ratings.Participant
		prior      = make(map[ratings.Participant]ratings.Rating, len(p.ps))
		bias       ratings.BiasTable
	)
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sqlLockFindMatch, r.MatchID, p.gameType).QueryRow(func(row pgx.Row) error {
		var key *string
		if err := row.Scan(&storedHash, &storedResp, &key); err != nil {
			return err
		}
		if key != nil {
			found, storedKey = true, *key
		}
		return nil
	})
	if len(p.mutators) > 0 {
		b.Queue(sqlMutatorStatuses, p.mutators).Query(func(rows pgx.Rows) error {
			var name, status string
			_, err := pgx.ForEachRow(rows, []any{&name, &status}, func() error {
				st, err := parseStatus(status)
				statuses[name] = st
				return err
			})
			return err
		})
	}
	b.Queue(sqlEnsureRatings, key, p.gameType, p.bots, p.ids).Query(func(rows pgx.Rows) error {
		var q ratings.Participant
		_, err := pgx.ForEachRow(rows, []any{&q.Bot, &q.ID}, func() error {
			inserted = append(inserted, q)
			return nil
		})
		return err
	})
	b.Queue(sqlLockRatings, key, p.bots, p.ids).Query(func(rows pgx.Rows) error {
		return scanRatings(rows, prior)
	})
	b.Queue(sqlBiasCells, key, p.bias.SideA, p.bias.SideB, p.bias.Map, p.bias.Size).Query(func(rows pgx.Rows) error {
		e := ratings.BiasEntry{Key: ratings.BiasKey{SideA: p.bias.SideA, SideB: p.bias.SideB}}
		var total *ratings.BiasCell
		var size int32
		_, err := pgx.ForEachRow(rows, []any{&e.Key.Map, &size, &e.Wins, &e.Games}, func() error {
			if e.Key.Map == "" {
				c := e.BiasCell
				total = &c
				return nil
			}
			e.Key.Size = int(size)
			return bias.Set(e)
		})
		if err == nil && total != nil {
			err = bias.SetTotal(e.Key, *total) // after Set, which adds the cell to the total
		}
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return rec, err
	}

	if found {
		if !bytes.Equal(storedHash, p.req.BodyHash[:]) {
			return rec, ratings.ConflictError(r.MatchID)
		}
		c, err := ratings.ParseContextKey(storedKey)
		if err != nil {
			return rec, fmt.Errorf("stored context key %q: %w", storedKey, err)
		}
		return ratings.Recorded{Context: c, Response: storedResp, Replayed: true}, nil
	}

	// The context by the stored statuses; mutators without a row are unknown.
	var fresh []string
	for _, m := range p.mutators {
		if _, ok := statuses[m]; !ok {
			statuses[m] = ratings.MutatorUnknown
			fresh = append(fresh, m)
		}
	}
	s.remember(statuses)
	c, err := contextOf(p, statuses)
	if err != nil {
		return rec, err
	}
	if c.Key() != key {
		return rec, errStaleGuess
	}

	for _, q := range inserted {
		delete(prior, q) // a row made just now: a newcomer, absent as the contract says
	}
	o, body, err := apply(c, prior, bias)
	if err != nil {
		return rec, applyError{err}
	}
	if err := ratings.CheckOutcome(*r, o); err != nil {
		return rec, applyError{err}
	}
	if body == nil {
		body = []byte{} // a response may be empty, but it is stored (NOT NULL)
	}

	b = &pgx.Batch{}
	n := len(o.Updates)
	var (
		ubots                           = make([]bool, n)
		uids                            = make([]string, n)
		skill, off, cmdr, skillG, cmdrG = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		games                           = make([]int64, n)
	)
	for i, u := range o.Updates {
		a := u.After
		ubots[i], uids[i] = u.Participant.Bot, u.Participant.ID
		skill[i], off[i], cmdr[i], skillG[i], cmdrG[i], games[i] = a.Skill, a.Offset, a.Commander, a.SkillG, a.CommanderG, int64(a.Games)
	}
	if unused := notUpdated(inserted, o.Updates); len(unused) > 0 {
		dbots, dids := participantArrays(unused)
		b.Queue(sqlDropRatings, key, dbots, dids)
	}
	if len(fresh) > 0 {
		b.Queue(sqlObserveMutators, fresh)
	}
	bu := o.BiasUpdate
	b.Queue(sqlWriteResult, key, p.gameType, ubots, uids, skill, off, cmdr, skillG, cmdrG, games,
		r.MatchID, p.req.BodyHash[:], string(p.doc), body,
		bu.Key.SideA, bu.Key.SideB, bu.Key.Map, bu.Key.Size, s.shards, bu.Wins, bu.Games).QueryRow(func(row pgx.Row) error {
		var updated, stored, bumped int64
		if err := row.Scan(&updated, &stored, &bumped); err != nil {
			return err
		}
		if updated != int64(n) || stored != 1 {
			return fmt.Errorf("db: the result's write touched %d ratings and %d matches, want %d and 1", updated, stored, n)
		}
		return nil
	})
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return rec, err
	}
	if st := conn.Conn().PgConn().TxStatus(); st != 'I' {
		return rec, fmt.Errorf("db: the transaction is still open after COMMIT (status %q)", st)
	}
	return ratings.Recorded{Context: c, Response: body}, nil
}

// notUpdated lists the participants whose rows were inserted but who got no update.
func notUpdated(inserted []ratings.Participant, ups []ratings.Update) []ratings.Participant {
	var out []ratings.Participant
	for _, q := range inserted {
		if !slices.ContainsFunc(ups, func(u ratings.Update) bool { return u.Participant == q }) {
			out = append(out, q)
		}
	}
	return out
}

// release rolls back whatever transaction is still open on conn and returns it to the pool.
// The rollback gets its own short deadline: the caller's context may be the reason it is
// needed. A connection that cannot be rolled back is closed by the pool on release.
func release(ctx context.Context, conn *pgxpool.Conn) {
	pc := conn.Conn().PgConn()
	if !pc.IsClosed() && !pc.IsBusy() && pc.TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, _ = conn.Exec(rctx, "ROLLBACK")
		cancel()
	}
	conn.Release()
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
	d := resultDoc{MatchID: r.MatchID, GameType: r.GameType, Mutators: r.Mutators, Map: r.Map, DurationS: r.DurationS, Winner: r.Winner}
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
	r := ratings.Result{MatchID: d.MatchID, GameType: d.GameType, Mutators: d.Mutators, Map: d.Map, DurationS: d.DurationS, Winner: d.Winner}
	for _, t := range d.Teams {
		tm := ratings.Team{Side: t.Side, Players: make([]ratings.Player, len(t.Players))}
		for i, p := range t.Players {
			tm.Players[i] = ratings.Player(p)
		}
		r.Teams = append(r.Teams, tm)
	}
	return r
}
