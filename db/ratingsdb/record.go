package ratingsdb

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
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

	// Rows for the participants the store has not seen yet (see Store.known), inserted in the
	// batch's lock order before the lock; RETURNING lists the ones that were new.
	sqlEnsureRatings = `
INSERT INTO ratings (context_key, is_bot, participant_id, game_type)
SELECT u.context_key, u.is_bot, u.participant_id, u.game_type
FROM unnest($1::text[], $2::boolean[], $3::text[], $4::text[]) WITH ORDINALITY AS u(context_key, is_bot, participant_id, game_type, n)
ORDER BY u.n
ON CONFLICT (context_key, is_bot, participant_id) DO NOTHING
RETURNING context_key, is_bot, participant_id`

	// Rows the batch inserted for participants no accepted result updated (an ApplyFunc may
	// skip some; a result that failed or whose context was guessed wrong updates none).
	sqlDropRatings = `
DELETE FROM ratings AS r
USING unnest($1::text[], $2::boolean[], $3::text[]) AS u(context_key, is_bot, participant_id)
WHERE r.context_key = u.context_key AND r.is_bot = u.is_bot AND r.participant_id = u.participant_id`

	// The participants' rows that exist, locked one by one in the order of the arrays: one
	// fixed order (context key, then players before bots, then id, all in byte order:
	// rowKey.compare), the same in every transaction, so two batches over the same players
	// neither deadlock nor lose an update. The locking subquery cannot be flattened into a
	// join, so each row is one primary-key lookup whatever the statistics say. A participant
	// without a row is a newcomer: its row is inserted with the writes (see sqlWriteResults).
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
SELECT u.n, c.map, c.size, c.wins, c.games, c.presence, c.presence_weight, c.newcomer, c.newcomer_weight, c.scale, c.scale_weight
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::integer[]) WITH ORDINALITY AS u(context_key, side_a, side_b, map, size, n)
CROSS JOIN LATERAL (
    SELECT b.map, b.size, sum(b.wins) AS wins, sum(b.games) AS games,
        sum(b.presence) AS presence, sum(b.presence_weight) AS presence_weight, sum(b.newcomer) AS newcomer,
        sum(b.newcomer_weight) AS newcomer_weight, sum(b.scale) AS scale, sum(b.scale_weight) AS scale_weight
    FROM bias_cells AS b
    WHERE b.context_key = u.context_key AND b.side_a = u.side_a AND b.side_b = u.side_b
      AND ((b.map = u.map AND b.size = u.size) OR (b.map = '' AND b.size = 0))
    GROUP BY b.map, b.size
) AS c`

	// The second round trip's writes in one statement (each data-modifying CTE runs once and to
	// completion): the participants' ratings, the matches with their responses, and the bias
	// increments.
	//
	// The ratings that existed are locked rows, so each takes the DO UPDATE path, found through
	// the primary key one by one (a plain UPDATE ... FROM unnest was planned as a scan of the
	// whole context once the table was large: 75 results/s against 10,000 rated players). A
	// row the lock did not find (one the store believed to exist, deleted since) is inserted,
	// in lock order, without ON CONFLICT: if another transaction created it meanwhile, the
	// primary key fails this one (23505 on ratings_pkey), and the batch runs again.
	//
	// The matches are inserted in the batch's order, which gives them their sequence numbers:
	// the order a rebuild replays them in is the order they were applied. The bias increments
	// are summed per cell in Go (a statement may not update a row twice) and added in the
	// connection's shard.
	sqlWriteResults = `
WITH updated AS (
    INSERT INTO ratings AS r (context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
        sigma, offset_sigma, commander_sigma)
    SELECT u.*
    FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[], $10::bigint[],
        $11::float8[], $12::float8[], $13::float8[])
      AS u(context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
        sigma, offset_sigma, commander_sigma)
    ON CONFLICT (context_key, is_bot, participant_id) DO UPDATE
    SET skill = excluded.skill, side_offset = excluded.side_offset, commander = excluded.commander,
        skill_g = excluded.skill_g, commander_g = excluded.commander_g, games = excluded.games,
        sigma = excluded.sigma, offset_sigma = excluded.offset_sigma, commander_sigma = excluded.commander_sigma, updated_at = now()
    RETURNING 1
), created AS (
    INSERT INTO ratings (context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
        sigma, offset_sigma, commander_sigma)
    SELECT u.context_key, u.game_type, u.is_bot, u.participant_id, u.skill, u.side_offset, u.commander, u.skill_g, u.commander_g, u.games,
        u.sigma, u.offset_sigma, u.commander_sigma
    FROM unnest($35::text[], $36::text[], $37::boolean[], $38::text[], $39::float8[], $40::float8[], $41::float8[], $42::float8[], $43::float8[], $44::bigint[],
        $45::float8[], $46::float8[], $47::float8[])
      WITH ORDINALITY AS u(context_key, game_type, is_bot, participant_id, skill, side_offset, commander, skill_g, commander_g, games,
        sigma, offset_sigma, commander_sigma, n)
    ORDER BY u.n
    RETURNING 1
), stored AS (
    INSERT INTO matches (match_id, game_type, context_key, body_hash, result, response)
    SELECT u.match_id, u.game_type, u.context_key, u.body_hash, u.result::json, u.response
    FROM unnest($14::text[], $15::text[], $16::text[], $17::bytea[], $18::text[], $19::bytea[]) WITH ORDINALITY
      AS u(match_id, game_type, context_key, body_hash, result, response, n)
    ORDER BY u.n
    RETURNING 1
), bumped AS (
    INSERT INTO bias_cells AS b (context_key, side_a, side_b, map, size, shard, game_type, wins, games,
        presence, presence_weight, newcomer, newcomer_weight, scale, scale_weight)
    SELECT u.context_key, u.side_a, u.side_b, u.map, u.size, pg_backend_pid() % $20, u.game_type, u.wins, u.games,
        u.presence, u.presence_weight, u.newcomer, u.newcomer_weight, u.scale, u.scale_weight
    FROM unnest($21::text[], $22::text[], $23::text[], $24::text[], $25::integer[], $26::text[], $27::float8[], $28::float8[],
        $29::float8[], $30::float8[], $31::float8[], $32::float8[], $33::float8[], $34::float8[])
      AS u(context_key, side_a, side_b, map, size, game_type, wins, games,
        presence, presence_weight, newcomer, newcomer_weight, scale, scale_weight)
    ON CONFLICT (context_key, side_a, side_b, map, size, shard)
    DO UPDATE SET wins = b.wins + excluded.wins, games = b.games + excluded.games,
        presence = b.presence + excluded.presence, presence_weight = b.presence_weight + excluded.presence_weight,
        newcomer = b.newcomer + excluded.newcomer, newcomer_weight = b.newcomer_weight + excluded.newcomer_weight,
        scale = b.scale + excluded.scale, scale_weight = b.scale_weight + excluded.scale_weight
    RETURNING 1
)
SELECT (SELECT count(*) FROM updated) + (SELECT count(*) FROM created), (SELECT count(*) FROM stored), (SELECT count(*) FROM bumped)`

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

// cellKey is a bias cell of a context, or with Map "" and Size 0 its side pair's total.
type cellKey struct {
	ctx string
	k   ratings.BiasKey
}

func (k cellKey) pair() cellKey {
	return cellKey{k.ctx, ratings.BiasKey{SideA: k.k.SideA, SideB: k.k.SideB}}
}

// jobState is where a job of a batch stands.
type jobState int

const (
	pending  jobState = iota
	settled           // answered already: a replay, a conflict, a failure of its own
	stale             // its context was guessed wrong: it runs again in another batch
	accepted          // applied: answered once the batch commits
)

// batchJob is a job in the batch being written.
type batchJob struct {
	*job
	key    string // the context key guessed from the cache
	state  jobState
	rec    ratings.Recorded // an accepted job's
	answer jobResult        // a settled job's
}

// batch is what one transaction writes, as the results are applied one by one.
type batch struct {
	jobs []*batchJob

	inserted map[rowKey]bool              // rows this transaction created (newcomers)
	locked   map[rowKey]ratings.Rating    // rows as read, locked
	current  map[rowKey]ratings.Rating    // rows as the accepted results left them
	gameType map[string]string            // context key -> game type
	cells    map[cellKey]ratings.BiasCell // bias cells and pair totals as read, plus the batch's increments
	bumps    map[cellKey]ratings.BiasCell // the batch's increments, to write
	fresh    map[string]bool              // mutators the accepted results saw first
}

func newBatch(jobs []*job) *batch {
	b := &batch{inserted: map[rowKey]bool{}, locked: map[rowKey]ratings.Rating{}, current: map[rowKey]ratings.Rating{},
		gameType: map[string]string{}, cells: map[cellKey]ratings.BiasCell{}, bumps: map[cellKey]ratings.BiasCell{},
		fresh: map[string]bool{}}
	for _, j := range jobs {
		b.jobs = append(b.jobs, &batchJob{job: j})
	}
	return b
}

// unsettled lists the jobs not answered yet.
func (b *batch) unsettled() []*job {
	var out []*job
	for _, bj := range b.jobs {
		if bj.state != settled {
			out = append(out, bj.job)
		}
	}
	return out
}

// settle gives the job its answer, sent once the transaction has ended (see commitBatch).
func (bj *batchJob) settle(rec ratings.Recorded, err error) {
	bj.state = settled
	bj.answer = jobResult{rec, err}
}

// writeBatch runs the batch's transaction once. It settles the jobs whose answer does not
// depend on the commit (replays, conflicts, their own failures); the caller answers them,
// and the accepted ones once it returned nil, after the transaction has ended.
func (s *Store) writeBatch(ctx context.Context, b *batch) error {
	// What to read: the guessed contexts' rows and cells, in lock order.
	var (
		gameTypes, matchIDs, mutators []string
		rows                          []rowKey
		cells                         []cellKey
	)
	for _, bj := range b.jobs {
		c, err := s.guess(bj.p)
		if err != nil {
			bj.settle(ratings.Recorded{}, db.MapError(err, "record result"))
			continue
		}
		bj.key = c.Key()
		b.gameType[bj.key] = bj.p.gameType
		gameTypes = append(gameTypes, bj.p.gameType)
		matchIDs = append(matchIDs, bj.p.req.Result.MatchID)
		mutators = append(mutators, bj.p.mutators...)
		for _, q := range bj.p.ps {
			rows = append(rows, rowKey{bj.key, q})
		}
		cells = append(cells, cellKey{bj.key, bj.p.bias})
	}
	if len(matchIDs) == 0 {
		return nil
	}
	slices.Sort(gameTypes)
	gameTypes = slices.Compact(gameTypes)
	slices.Sort(mutators)
	mutators = slices.Compact(mutators)
	slices.SortFunc(rows, rowKey.compare)
	rows = slices.Compact(rows)
	cells = uniqueCells(cells)

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer db.Release(ctx, conn, s.db.Timeout())

	type stored struct {
		hash, response []byte
		key            string
	}
	found := map[string]stored{}
	statuses := make(map[string]ratings.MutatorStatus, len(mutators))
	rctx, rbots, rids := rowArrays(rows)
	unseen := s.unseen(rows, b.retried())

	q := &pgx.Batch{}
	q.Queue("BEGIN")
	q.Queue(sqlLockGameTypes, gameTypes)
	q.Queue(sqlFindMatches, matchIDs).Query(func(rs pgx.Rows) error {
		var id string
		var m stored
		_, err := pgx.ForEachRow(rs, []any{&id, &m.hash, &m.response, &m.key}, func() error {
			found[id] = m
			return nil
		})
		return err
	})
	if len(mutators) > 0 {
		q.Queue(sqlMutatorStatuses, mutators).Query(func(rs pgx.Rows) error {
			var name, status string
			_, err := pgx.ForEachRow(rs, []any{&name, &status}, func() error {
				st, err := parseStatus(status)
				statuses[name] = st
				return err
			})
			return err
		})
	}
	if len(unseen) > 0 {
		uctx, ubots, uids := rowArrays(unseen)
		games := make([]string, len(unseen))
		for i, k := range unseen {
			games[i] = b.gameType[k.ctx]
		}
		q.Queue(sqlEnsureRatings, uctx, ubots, uids, games).Query(func(rs pgx.Rows) error {
			var k rowKey
			_, err := pgx.ForEachRow(rs, []any{&k.ctx, &k.p.Bot, &k.p.ID}, func() error {
				b.inserted[k] = true
				return nil
			})
			return err
		})
	}
	q.Queue(sqlLockRatings, rctx, rbots, rids).Query(func(rs pgx.Rows) error {
		var k rowKey
		var r ratings.Rating
		var games int64
		_, err := pgx.ForEachRow(rs, append([]any{&k.ctx, &k.p.Bot, &k.p.ID}, ratingDest(&r, &games)...), func() error {
			r.Games = int(games)
			b.locked[k] = r
			return nil
		})
		return err
	})
	bctx, bsa, bsb, bmap, bsize := cellArrays(cells)
	q.Queue(sqlBiasCells, bctx, bsa, bsb, bmap, bsize).Query(func(rs pgx.Rows) error {
		var n int64
		var m string
		var size int32
		var c ratings.BiasCell
		_, err := pgx.ForEachRow(rs, []any{&n, &m, &size, &c.Wins, &c.Games, &c.Terms.Presence, &c.Terms.PresenceWeight,
			&c.Terms.Newcomer, &c.Terms.NewcomerWeight, &c.Terms.Scale, &c.Terms.ScaleWeight}, func() error {
			k := cells[n-1]
			if m == "" {
				k = k.pair()
			}
			b.cells[k] = c
			return nil
		})
		return err
	})
	if err := conn.SendBatch(ctx, q).Close(); err != nil {
		return err
	}

	// The contexts by the stored statuses; mutators without a row are unknown.
	var fresh []string
	for _, m := range mutators {
		if _, ok := statuses[m]; !ok {
			statuses[m] = ratings.MutatorUnknown
			fresh = append(fresh, m)
		}
	}
	s.remember(statuses)

	for _, bj := range b.jobs {
		if bj.state != pending {
			continue
		}
		if err := bj.ctx.Err(); err != nil {
			// The caller has gone (its deadline passed while the batch waited for a lock, say):
			// its result is left out, so that only a commit under way leaves it in doubt.
			bj.settle(ratings.Recorded{}, db.MapError(err, "record result"))
			continue
		}
		r := &bj.p.req.Result
		if m, ok := found[r.MatchID]; ok {
			if !bytes.Equal(m.hash, bj.p.req.BodyHash[:]) {
				bj.settle(ratings.Recorded{}, ratings.ConflictError(r.MatchID))
				continue
			}
			c, err := ratings.ParseContextKey(m.key)
			if err != nil {
				bj.settle(ratings.Recorded{}, db.MapError(fmt.Errorf("stored context key %q: %w", m.key, err), "record result"))
				continue
			}
			bj.settle(ratings.Recorded{Context: c, Response: m.response, Replayed: true}, nil)
			continue
		}
		c, err := contextOf(bj.p, statuses)
		if err != nil {
			bj.settle(ratings.Recorded{}, err)
			continue
		}
		if c.Key() != bj.key {
			bj.state = stale
			continue
		}
		b.apply(bj, c)
	}

	var applied []*batchJob
	for _, bj := range b.jobs {
		if bj.state == accepted {
			applied = append(applied, bj)
		}
	}
	if len(applied) == 0 {
		return nil // release rolls back
	}

	q = &pgx.Batch{}
	if drop := b.unused(); len(drop) > 0 {
		dctx, dbots, dids := rowArrays(drop)
		q.Queue(sqlDropRatings, dctx, dbots, dids)
	}
	var observe []string
	for _, m := range fresh {
		if b.fresh[m] {
			observe = append(observe, m)
		}
	}
	if len(observe) > 0 {
		q.Queue(sqlObserveMutators, observe)
	}
	w := b.writes(applied, s.shards)
	q.Queue(sqlWriteResults, w.args...).QueryRow(func(row pgx.Row) error {
		var updated, storedN, bumped int64
		if err := row.Scan(&updated, &storedN, &bumped); err != nil {
			return err
		}
		if updated != int64(w.ratings) || storedN != int64(len(applied)) || bumped != int64(w.bumps) {
			return fmt.Errorf("db: the batch's write touched %d ratings, %d matches and %d bias rows, want %d, %d and %d",
				updated, storedN, bumped, w.ratings, len(applied), w.bumps)
		}
		return nil
	})
	q.Queue("COMMIT")
	if err := conn.SendBatch(ctx, q).Close(); err != nil {
		return err
	}
	if st := conn.Conn().PgConn().TxStatus(); st != 'I' {
		return fmt.Errorf("db: the transaction is still open after COMMIT (status %q)", st)
	}
	s.see(b)
	return nil
}

// knownRowsMax bounds Store.known: past it the set starts again empty, and the rows it forgot
// cost an INSERT ... ON CONFLICT DO NOTHING each the next time they are met.
const knownRowsMax = 200_000

// unseen lists the rows of a batch that the store does not know to exist, or all of them for
// a batch that runs again (it may have met a row created by another batch at the same time).
func (s *Store) unseen(rows []rowKey, all bool) []rowKey {
	if all {
		return rows
	}
	var out []rowKey
	s.known.Lock()
	for _, k := range rows {
		if _, ok := s.known.rows[k]; !ok {
			out = append(out, k)
		}
	}
	s.known.Unlock()
	return out
}

// see records the rows a committed batch found or wrote.
func (s *Store) see(b *batch) {
	s.known.Lock()
	defer s.known.Unlock()
	if len(s.known.rows)+len(b.current) > knownRowsMax {
		s.known.rows = make(map[rowKey]struct{}, knownRowsMax)
	}
	for k := range b.current {
		s.known.rows[k] = struct{}{}
	}
	for k := range b.locked {
		if !b.inserted[k] { // an inserted row is kept only if updated: it is in current then
			s.known.rows[k] = struct{}{}
		}
	}
}

// retried reports whether a job of the batch has run before.
func (b *batch) retried() bool {
	for _, bj := range b.jobs {
		if bj.attempts > 0 {
			return true
		}
	}
	return false
}

// unused lists the rows this transaction inserted that no accepted result updated.
func (b *batch) unused() []rowKey {
	var out []rowKey
	for k := range b.inserted {
		if _, ok := b.current[k]; !ok {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, rowKey.compare)
	return out
}

// apply runs a job's ApplyFunc on the ratings and bias cells as the batch's earlier results
// left them and, if its outcome is sound, makes it part of the batch.
func (b *batch) apply(bj *batchJob, c ratings.Context) {
	p := bj.p
	prior := make(map[ratings.Participant]ratings.Rating, len(p.ps))
	for _, q := range p.ps {
		k := rowKey{bj.key, q}
		if r, ok := b.current[k]; ok {
			prior[q] = r
		} else if r, ok := b.locked[k]; ok && !b.inserted[k] {
			prior[q] = r // a row made just now is a newcomer's: absent, as the contract says
		}
	}
	var bias ratings.BiasTable
	ck := cellKey{bj.key, p.bias}
	if cell, ok := b.cells[ck]; ok {
		if err := bias.Set(ratings.BiasEntry{Key: p.bias, BiasCell: cell}); err != nil {
			bj.settle(ratings.Recorded{}, db.MapError(err, "record result"))
			return
		}
	}
	if total, ok := b.cells[ck.pair()]; ok {
		if err := bias.SetTotal(p.bias, total); err != nil { // after Set, which adds the cell to the total
			bj.settle(ratings.Recorded{}, db.MapError(err, "record result"))
			return
		}
	}
	o, body, err := safeApply(bj.apply, c, prior, bias)
	if err == nil {
		err = ratings.CheckOutcome(p.req.Result, o)
	}
	if err == nil && bj.ctx.Err() != nil {
		err = db.MapError(bj.ctx.Err(), "record result") // the caller left while it was applied
	}
	if err != nil {
		bj.settle(ratings.Recorded{}, err)
		return
	}
	if body == nil {
		body = []byte{} // a response may be empty, but it is stored (NOT NULL)
	}
	for _, u := range o.Updates {
		b.current[rowKey{bj.key, u.Participant}] = u.After
	}
	if bu := o.BiasUpdate; bu.Games > 0 {
		k := cellKey{bj.key, bu.Key}
		for _, k := range []cellKey{k, k.pair()} {
			b.cells[k] = addCell(b.cells[k], bu.BiasCell)
			b.bumps[k] = addCell(b.bumps[k], bu.BiasCell)
		}
	}
	for _, m := range p.mutators {
		b.fresh[m] = true
	}
	bj.state = accepted
	bj.rec = ratings.Recorded{Context: c, Response: body}
}

// safeApply calls apply, turning a panic into an error of this result alone: it runs on a
// committer, where a panic would end the process, not just one request.
func safeApply(apply ratings.ApplyFunc, c ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (o ratings.Outcome, body []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = apperr.New(apperr.Internal, "record result: apply panicked: %v", r)
		}
	}()
	return apply(c, prior, bias)
}

func addCell(a, b ratings.BiasCell) ratings.BiasCell {
	t := a.Terms
	t.Presence += b.Terms.Presence
	t.PresenceWeight += b.Terms.PresenceWeight
	t.Newcomer += b.Terms.Newcomer
	t.NewcomerWeight += b.Terms.NewcomerWeight
	t.Scale += b.Terms.Scale
	t.ScaleWeight += b.Terms.ScaleWeight
	return ratings.BiasCell{Wins: a.Wins + b.Wins, Games: a.Games + b.Games, Terms: t}
}

// batchWrites are the arguments of sqlWriteResults, and how many rows it must touch.
type batchWrites struct {
	args           []any
	ratings, bumps int
}

func (b *batch) writes(applied []*batchJob, shards int) batchWrites {
	var existing, created []rowKey
	for k := range b.current {
		if _, ok := b.locked[k]; ok {
			existing = append(existing, k)
		} else {
			created = append(created, k)
		}
	}
	slices.SortFunc(existing, rowKey.compare)
	slices.SortFunc(created, rowKey.compare) // inserted in lock order
	m := len(applied)
	var (
		mids, mgame, mctx, mdoc = make([]string, m), make([]string, m), make([]string, m), make([]string, m)
		mhash, mresp            = make([][]byte, m), make([][]byte, m)
	)
	for i, bj := range applied {
		mids[i], mgame[i], mctx[i], mdoc[i] = bj.p.req.Result.MatchID, bj.p.gameType, bj.key, string(bj.p.doc)
		mhash[i], mresp[i] = bj.p.req.BodyHash[:], bj.rec.Response
	}
	bumps := make([]cellKey, 0, len(b.bumps))
	for k := range b.bumps {
		bumps = append(bumps, k)
	}
	bumps = uniqueCells(bumps)
	bctx, bsa, bsb, bmap, bsize := cellArrays(bumps)
	nb := len(bumps)
	bgame, wins, bgames := make([]string, nb), make([]float64, nb), make([]float64, nb)
	terms := [6][]float64{make([]float64, nb), make([]float64, nb), make([]float64, nb), make([]float64, nb), make([]float64, nb), make([]float64, nb)}
	for i, k := range bumps {
		c := b.bumps[k]
		bgame[i], wins[i], bgames[i] = b.gameType[k.ctx], c.Wins, c.Games
		t := c.Terms
		terms[0][i], terms[1][i], terms[2][i], terms[3][i], terms[4][i], terms[5][i] = t.Presence, t.PresenceWeight, t.Newcomer, t.NewcomerWeight, t.Scale, t.ScaleWeight
	}
	args := b.ratingArrays(existing)
	args = append(args, mids, mgame, mctx, mhash, mdoc, mresp, shards, bctx, bsa, bsb, bmap, bsize, bgame, wins, bgames,
		terms[0], terms[1], terms[2], terms[3], terms[4], terms[5])
	args = append(args, b.ratingArrays(created)...)
	return batchWrites{args: args, ratings: len(existing) + len(created), bumps: len(bumps)}
}

// ratingArrays are the thirteen arrays of sqlWriteResults that give rows' ratings as the
// batch left them.
func (b *batch) ratingArrays(keys []rowKey) []any {
	n := len(keys)
	var (
		ctxs, games, ids = make([]string, n), make([]string, n), make([]string, n)
		bots             = make([]bool, n)
		skill            = make([]float64, n)
		played           = make([]int64, n)
		// The numbers written as NULL when zero (ratingValue): off, cmdr, skillG, cmdrG,
		// sigma, offSigma, cmdrSigma.
		nullable = [7][]pgtype.Float8{}
	)
	for j := range nullable {
		nullable[j] = make([]pgtype.Float8, n)
	}
	for i, k := range keys {
		a := b.current[k]
		ctxs[i], games[i], bots[i], ids[i] = k.ctx, b.gameType[k.ctx], k.p.Bot, k.p.ID
		skill[i], played[i] = a.Skill, int64(a.Games)
		for j, x := range [7]float64{a.Offset, a.Commander, a.SkillG, a.CommanderG, a.Sigma, a.OffsetSigma, a.CommanderSigma} {
			nullable[j][i] = ratingValue(x)
		}
	}
	return []any{ctxs, games, bots, ids, skill, nullable[0], nullable[1], nullable[2], nullable[3], played, nullable[4], nullable[5], nullable[6]}
}

// rowArrays splits rows into the arrays the SQL unnests.
func rowArrays(rows []rowKey) (ctxs []string, bots []bool, ids []string) {
	ctxs, bots, ids = make([]string, len(rows)), make([]bool, len(rows)), make([]string, len(rows))
	for i, k := range rows {
		ctxs[i], bots[i], ids[i] = k.ctx, k.p.Bot, k.p.ID
	}
	return ctxs, bots, ids
}

// uniqueCells sorts cells and drops repeats.
func uniqueCells(cells []cellKey) []cellKey {
	slices.SortFunc(cells, func(x, y cellKey) int {
		return cmp.Or(cmp.Compare(x.ctx, y.ctx), cmp.Compare(x.k.SideA, y.k.SideA), cmp.Compare(x.k.SideB, y.k.SideB),
			cmp.Compare(x.k.Map, y.k.Map), cmp.Compare(x.k.Size, y.k.Size))
	})
	return slices.Compact(cells)
}

func cellArrays(cells []cellKey) (ctxs, sideA, sideB, maps []string, sizes []int32) {
	n := len(cells)
	ctxs, sideA, sideB, maps, sizes = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int32, n)
	for i, c := range cells {
		ctxs[i], sideA[i], sideB[i], maps[i], sizes[i] = c.ctx, c.k.SideA, c.k.SideB, c.k.Map, int32(c.k.Size)
	}
	return ctxs, sideA, sideB, maps, sizes
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
