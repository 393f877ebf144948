package ratingsdb

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// A batch is what one transaction of group commit (commit.go) writes: its jobs, the rows and
// cells it read and locked, and what the results applied so far left. writeBatch runs it in
// two round trips (see RecordResult).

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

	locked   map[rowKey]ratings.Rating    // rows as read, locked (a newcomer has none)
	current  map[rowKey]ratings.Rating    // rows as the accepted results left them
	gameType map[string]string            // context key -> game type
	cells    map[cellKey]ratings.BiasCell // bias cells and pair totals as read, plus the batch's increments
	bumps    map[cellKey]ratings.BiasCell // the batch's increments, to write
	fresh    map[string]bool              // mutators the accepted results saw first
	seasons  map[string][]ratings.Season  // by context key, those whose reset was applied
}

func newBatch(jobs []*job) *batch {
	b := &batch{locked: map[rowKey]ratings.Rating{}, current: map[rowKey]ratings.Rating{},
		gameType: map[string]string{}, cells: map[cellKey]ratings.BiasCell{}, bumps: map[cellKey]ratings.BiasCell{},
		fresh: map[string]bool{}, seasons: map[string][]ratings.Season{}}
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
	r := s.planReads(b)
	if len(r.matchIDs) == 0 {
		return nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer db.Release(ctx, conn, s.db.Timeout())

	if err := conn.SendBatch(ctx, r.queue(b, s.unseen(r.rows, b.retried()))).Close(); err != nil {
		return err
	}
	fresh := r.unknownMutators()
	s.remember(r.statuses)
	for _, bj := range b.jobs {
		if bj.state == pending {
			b.decide(bj, r)
		}
	}
	applied := b.accepted()
	if len(applied) == 0 {
		return nil // release rolls back
	}
	if err := conn.SendBatch(ctx, s.writesQueue(b, applied, fresh)).Close(); err != nil {
		return err
	}
	if err := db.Committed(conn); err != nil {
		return err
	}
	s.see(b)
	return nil
}

// batchReads is what a batch's first round trip asks for (the guessed contexts' rows and
// cells, in lock order) and what it found.
type batchReads struct {
	gameTypes, matchIDs, mutators []string
	rows                          []rowKey
	cells                         []cellKey

	found    map[string]storedMatch           // by match id
	statuses map[string]ratings.MutatorStatus // of the mutators that have a row
}

// storedMatch is a result stored already under a batch's match id.
type storedMatch struct {
	hash, response []byte
	key            string
}

// planReads guesses each job's context from the cached statuses (settling those it cannot)
// and lists what the batch must read and lock.
func (s *Store) planReads(b *batch) *batchReads {
	r := &batchReads{found: map[string]storedMatch{}}
	for _, bj := range b.jobs {
		c, err := s.guess(bj.p)
		if err != nil {
			bj.settle(ratings.Recorded{}, db.MapError(err, "record result"))
			continue
		}
		bj.key = c.Key()
		b.gameType[bj.key] = bj.p.gameType
		r.gameTypes = append(r.gameTypes, bj.p.gameType)
		r.matchIDs = append(r.matchIDs, bj.p.req.Result.MatchID)
		r.mutators = append(r.mutators, bj.p.mutators...)
		for _, q := range bj.p.ps {
			r.rows = append(r.rows, rowKey{bj.key, q})
		}
		r.cells = append(r.cells, cellKey{bj.key, bj.p.bias})
	}
	slices.Sort(r.gameTypes)
	r.gameTypes = slices.Compact(r.gameTypes)
	slices.Sort(r.mutators)
	r.mutators = slices.Compact(r.mutators)
	slices.SortFunc(r.rows, rowKey.compare)
	r.rows = slices.Compact(r.rows)
	r.cells = uniqueCells(r.cells)
	r.statuses = make(map[string]ratings.MutatorStatus, len(r.mutators))
	return r
}

// queue is the first round trip: BEGIN, the game types' locks, the stored matches and
// mutator statuses (into r), the claims of the unseen rows, and the rows that exist and the
// cells (into b).
func (r *batchReads) queue(b *batch, unseen []rowKey) *pgx.Batch {
	q := &pgx.Batch{}
	q.Queue("BEGIN")
	q.Queue(sqlLockGameTypes, r.gameTypes)
	q.Queue(sqlFindMatches, r.matchIDs).Query(func(rs pgx.Rows) error {
		var id string
		var m storedMatch
		_, err := pgx.ForEachRow(rs, []any{&id, &m.hash, &m.response, &m.key}, func() error {
			r.found[id] = m
			return nil
		})
		return err
	})
	if len(r.mutators) > 0 {
		q.Queue(sqlMutatorStatuses, r.mutators).Query(func(rs pgx.Rows) error {
			var name, status string
			_, err := pgx.ForEachRow(rs, []any{&name, &status}, func() error {
				st, err := parseStatus(status)
				r.statuses[name] = st
				return err
			})
			return err
		})
	}
	if len(unseen) > 0 {
		class, keys := rowClaims(unseen)
		q.Queue(sqlClaimRows, class, keys)
	}
	b.queueLocks(q, r.rows, r.cells)
	return q
}

// Advisory locks that stand for rating rows which may not exist yet (see sqlClaimRows): one
// a row in claimClass, or, for a batch of more than maxRowClaims rows it has not seen, one a
// bucket of rows in bucketClass (at most maxRowClaims of them), so that a batch of large
// teams of newcomers holds a bounded part of the server's lock table.
const (
	claimClass, bucketClass = 6, 7
	maxRowClaims            = 256 // a power of two: a row's bucket is its key's low bits
)

// rowClaims are the class and keys of the advisory locks a batch takes for rows, in order.
func rowClaims(rows []rowKey) (class int32, keys []int32) {
	keys = make([]int32, len(rows))
	for i, k := range rows {
		keys[i] = k.claim()
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) <= maxRowClaims {
		return claimClass, keys
	}
	for i := range keys {
		keys[i] &= maxRowClaims - 1
	}
	slices.Sort(keys)
	return bucketClass, slices.Compact(keys)
}

// queueLocks locks the rows and reads them and the bias cells into b.
func (b *batch) queueLocks(q *pgx.Batch, rows []rowKey, cells []cellKey) {
	rctx, rbots, rids := rowArrays(rows)
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
	// Read after the rows are locked: a reset committed before this statement is seen here,
	// and none of these rows was reset by its passes unless this statement sees it (they run
	// after the reset commits, and skip locked rows).
	q.Queue(sqlResetSeasons, uniqueContexts(rows)).Query(func(rs pgx.Rows) error {
		return scanSeasons(rs, func(se ratings.Season) { b.seasons[se.Context.Key()] = append(b.seasons[se.Context.Key()], se) })
	})
	bctx, bsa, bsb, bmap, bsize := cellArrays(cells)
	q.Queue(sqlBiasCells, bctx, bsa, bsb, bmap, bsize).Query(func(rs pgx.Rows) error {
		var n int64
		var m string
		var size int32
		var c ratings.BiasCell
		_, err := pgx.ForEachRow(rs, []any{&n, &m, &size, &c.Wins, &c.Games, &c.Terms.Presence, &c.Terms.PresenceWeight,
			&c.Terms.Newcomer, &c.Terms.NewcomerWeight, &c.Terms.Scale, &c.Terms.ScaleWeight,
			&c.Terms.AltScale, &c.Terms.AltScaleWeight, &c.Terms.Evidence}, func() error {
			k := cells[n-1]
			if m == "" {
				k = k.pair()
			}
			b.cells[k] = c
			return nil
		})
		return err
	})
}

// unknownMutators gives the mutators without a row their status, unknown, and lists them: the
// contexts are then those of the stored statuses.
func (r *batchReads) unknownMutators() []string {
	var fresh []string
	for _, m := range r.mutators {
		if _, ok := r.statuses[m]; !ok {
			r.statuses[m] = ratings.MutatorUnknown
			fresh = append(fresh, m)
		}
	}
	return fresh
}

// decide settles a pending job after the first round trip (its caller gone, a replay, a
// conflict, a context it cannot have), marks it stale if its context was guessed wrong, or
// applies it.
func (b *batch) decide(bj *batchJob, r *batchReads) {
	if err := bj.ctx.Err(); err != nil {
		// The caller has gone (its deadline passed while the batch waited for a lock, say):
		// its result is left out, so that only a commit under way leaves it in doubt.
		bj.settle(ratings.Recorded{}, db.MapError(err, "record result"))
		return
	}
	res := &bj.p.req.Result
	if m, ok := r.found[res.MatchID]; ok {
		if !bytes.Equal(m.hash, bj.p.req.BodyHash[:]) {
			bj.settle(ratings.Recorded{}, ratings.ConflictError(res.MatchID))
			return
		}
		c, err := ratings.ParseContextKey(m.key)
		if err != nil {
			bj.settle(ratings.Recorded{}, db.MapError(fmt.Errorf("stored context key %q: %w", m.key, err), "record result"))
			return
		}
		bj.settle(ratings.Recorded{Context: c, Response: m.response, Replayed: true}, nil)
		return
	}
	c, err := contextOf(bj.p, r.statuses)
	if err != nil {
		bj.settle(ratings.Recorded{}, err)
		return
	}
	if c.Key() != bj.key {
		bj.state = stale
		return
	}
	b.apply(bj, c)
}

// accepted lists the jobs applied, in the batch's order.
func (b *batch) accepted() []*batchJob {
	var applied []*batchJob
	for _, bj := range b.jobs {
		if bj.state == accepted {
			applied = append(applied, bj)
		}
	}
	return applied
}

// writesQueue is the second round trip: the mutators the accepted results saw first (of
// fresh), the writes (checked by their counts), COMMIT.
func (s *Store) writesQueue(b *batch, applied []*batchJob, fresh []string) *pgx.Batch {
	q := &pgx.Batch{}
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
	return q
}

// knownRowsMax bounds Store.known: past it the set starts again empty, and the rows it forgot
// cost an advisory lock each (sqlClaimRows) the next time they are met.
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
		s.known.rows[k] = struct{}{}
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
