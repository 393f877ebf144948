package queuedb

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
)

// The claims' ends of results (EndClaims), group-committed: the ends that come while one
// transaction of them is under way wait and share the next, as ticket creations and
// results do. A result used to end its match's claims in a transaction of its own (BEGIN,
// SET, the update, COMMIT: a round trip and a transaction a result), which at a thousand
// results a second was the statement the database ran most often (docs/performance.md,
// "The throughput table").

// sqlEndClaims ends at at[i] the claims of match[i], their rows locked in player order
// across the matches, and returns the match of each claim it ended.
const sqlEndClaims = `
WITH ending AS (
    SELECT c.player_id, u.match, u.at
    FROM unnest($1::text[], $2::timestamptz[]) AS u(match, at)
    JOIN queue_claims AS c ON c.match_id = u.match AND c.until > u.at
    ORDER BY c.player_id FOR NO KEY UPDATE OF c)
UPDATE queue_claims AS c SET until = ending.at FROM ending
WHERE c.player_id = ending.player_id AND c.match_id = ending.match AND c.until > ending.at
RETURNING c.match_id`

// maxEndBatch bounds the matches one transaction ends. One transaction of ends is under
// way at a time, as one of creations: two at once made smaller batches, more CPU an end, and
// no more ends a second (BenchmarkQueueEndClaims, docs/performance.md).
const maxEndBatch = 256

// endRequest is one EndClaims call waiting for its batch.
type endRequest struct {
	ctx   context.Context
	match string
	at    time.Time
	done  chan endOutcome // buffered: the batch never waits for the caller
}

type endOutcome struct {
	ended bool
	err   error
}

// claimEnds is the queue of ends not yet taken by a batch, and whether a goroutine is
// committing them (it runs while there are any, and is started again by the next end).
type claimEnds struct {
	mu         sync.Mutex
	pending    []*endRequest
	committing bool
}

// EndClaims implements queue.TicketStore. It does not take the ticks' claims lock: a tick
// holds that lock from its reads of the players to its COMMIT, and every result waiting
// behind it held a pool connection meanwhile, which starved the creations and reads of the
// pool at a few hundred results a second (docs/performance.md, "The throughput table"). It
// needs no lock: a tick reads claims in one statement, so it sees this update committed or
// not, as if it had come just after or before the tick, and a claim the tick overwrites (its
// player matched anew) no longer names match, which the update re-checks on the row it waits
// for. Its rows (and those of the other ends in its batch) are locked in player order, as the
// ticks write theirs (queueClaims), so the two never deadlock. A result whose players hold no
// live claim of match locks nothing.
//
// Not durable, it is group-committed (above) in a transaction that sets synchronous_commit
// off: its COMMIT does not wait for the WAL flush, which was the wait of most results at a few
// thousand a second (docs/performance.md, "Where one replica's database waits at 4,000/s"). A
// later synchronous commit on this server flushes (and waits for a synchronous standby up to)
// every record written before its own, so the caller's next one makes the end durable.
// Durable, it runs on its own and its transaction takes a transaction id, so its COMMIT
// writes a record and flushes even when it ends nothing: it covers a deferred end before it
// whose later commit never came (a replayed result).
func (s *Store) EndClaims(ctx context.Context, match string, at time.Time, durable bool) (ended bool, err error) {
	req := &endRequest{ctx: ctx, match: match, at: at.Truncate(time.Microsecond), done: make(chan endOutcome, 1)}
	if durable {
		ends, err := s.writeEnds(ctx, []*endRequest{req}, true)
		return ends[match], err
	}
	s.ends.mu.Lock()
	s.ends.pending = append(s.ends.pending, req)
	start := !s.ends.committing
	s.ends.committing = true
	s.ends.mu.Unlock()
	if start {
		go s.commitEnds()
	}
	select {
	case out := <-req.done:
		return out.ended, out.err
	case <-ctx.Done():
		// Its batch may still end the claims: an end is kept or redone, never undone, and
		// the caller's error makes its client send the result again.
		return false, db.MapError(ctx.Err(), "queue: end claims")
	}
}

// commitEnds commits the pending ends a batch at a time until there are none. A match at
// most once a batch: the second end of it waits for the next, where it finds the claims
// ended (as it would have one after the other).
func (s *Store) commitEnds() {
	for {
		s.ends.mu.Lock()
		var batch, rest []*endRequest
		seen := make(map[string]bool, len(s.ends.pending))
		for _, r := range s.ends.pending {
			if seen[r.match] || len(batch) == maxEndBatch {
				rest = append(rest, r)
				continue
			}
			seen[r.match] = true
			batch = append(batch, r)
		}
		s.ends.pending = rest
		if len(batch) == 0 {
			s.ends.committing = false
			s.ends.mu.Unlock()
			return
		}
		s.ends.mu.Unlock()
		ctx, cancel := context.WithDeadline(s.bg, endsDeadline(batch))
		ends, err := s.writeEnds(ctx, batch, false)
		cancel()
		for _, r := range batch {
			r.done <- endOutcome{ends[r.match], err}
		}
	}
}

// endsDeadline is the latest deadline of the batch's callers, at most db.DefaultTimeout away.
func endsDeadline(batch []*endRequest) time.Time {
	limit := time.Now().Add(db.DefaultTimeout)
	var deadline time.Time
	for _, r := range batch {
		d, ok := r.ctx.Deadline()
		if !ok {
			return limit
		}
		deadline = later(deadline, d)
	}
	if deadline.After(limit) {
		return limit
	}
	return deadline
}

// writeEnds ends the claims of reqs' matches in one transaction (again after a deadlock) and
// says which matches had claims ended.
func (s *Store) writeEnds(ctx context.Context, reqs []*endRequest, durable bool) (ended map[string]bool, err error) {
	matches, at := make([]string, len(reqs)), make([]pgtype.Timestamptz, len(reqs))
	for i, r := range reqs {
		matches[i], at[i] = r.match, pgtype.Timestamptz{Time: r.at, Valid: true}
	}
	err = db.InTx(ctx, s.pool, "queue: end claims", func(conn *pgxpool.Conn) error {
		ended = make(map[string]bool, len(reqs))
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		if durable {
			b.Queue("SELECT pg_current_xact_id()")
		} else {
			b.Queue("SET LOCAL synchronous_commit = off")
		}
		b.Queue(sqlEndClaims, matches, at).Query(func(rows pgx.Rows) error {
			var m string
			_, err := pgx.ForEachRow(rows, []any{&m}, func() error {
				ended[m] = true
				return nil
			})
			return err
		})
		b.Queue("COMMIT")
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return db.Committed(conn)
	})
	if err != nil {
		return nil, err
	}
	return ended, nil
}
