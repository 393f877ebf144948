package queuedb

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// purgeChunk is how many rows one purge statement deletes. Each statement is a transaction
// of its own: a purge that runs out of time keeps what it deleted, and no statement holds
// row locks, or the WAL of one huge delete, for long. 5,000 events take about 20 ms.
const purgeChunk = 5000

// One replica purges at a time: the others find the lock taken and skip their turn, where
// they used to queue behind each other's deletes of the same rows.
const (
	sqlTryPurgeLock = `SELECT pg_try_advisory_lock(4, 0)`
	sqlPurgeUnlock  = `SELECT pg_advisory_unlock(4, 0)`
)

const (
	sqlPurgeTickets = `
DELETE FROM queue_tickets WHERE id IN (
    SELECT id FROM queue_tickets
    WHERE status NOT IN ('searching', 'proposed', 'placing') AND updated_at < $1
    ORDER BY updated_at LIMIT $2)
AND status NOT IN ('searching', 'proposed', 'placing')`
	// A proposal open an hour past its deadline belongs to a deleted queue (whose deletion
	// cancelled its tickets): no leader will expire it.
	sqlPurgeProposals = `
DELETE FROM queue_proposals WHERE id IN (
    (SELECT id FROM queue_proposals WHERE state NOT IN ('open', 'placing') AND resolved_at < $1 LIMIT $2)
    UNION ALL
    (SELECT id FROM queue_proposals WHERE state IN ('open', 'placing') AND accept_by < $1 AND queue IN (
        SELECT name FROM queues WHERE deleted_at IS NOT NULL) LIMIT $2))`
	sqlPurgeMatches = `
DELETE FROM queue_matches WHERE id IN (
    SELECT id FROM queue_matches WHERE created_at < $1 ORDER BY created_at LIMIT $2)`
	// Events go in a prefix per queue, so that the remaining ones still count up without
	// gaps: up to the first that is not older than $1 (found by walking the queue's events in
	// order: the ones to delete, and one) and, while the queue has a webhook, up to its cursor.
	// A deleted queue's webhook sends no more, so its outbox is not kept. The bounds are read
	// per queue in a statement of their own: joined to the delete, the planner ran the walk
	// once per event (5k events: 5.6 s; 20k: 153 s).
	sqlPurgeEventBounds = `
SELECT q.name,
       (SELECT min(x.seq) FROM queue_events AS x WHERE x.queue = q.name),
       least(
           coalesce((SELECT x.seq - 1 FROM queue_events AS x
                     WHERE x.queue = q.name AND x.at >= $1
                     ORDER BY x.seq LIMIT 1), q.event_seq),
           CASE WHEN q.webhook_url IS NULL OR q.deleted_at IS NOT NULL THEN q.event_seq ELSE q.webhook_seq END)
FROM queues AS q`
	sqlPurgeEventRange = `DELETE FROM queue_events WHERE queue = $1 AND seq >= $2 AND seq <= $3`
)

// Purge implements queue.Store. Queues are never purged: a deleted queue's row stays (see
// the migration), so that its events keep their numbers. It deletes in chunks, each its own
// transaction, and while another process purges it does nothing. On an error (its deadline,
// say) it returns what it deleted so far with the error.
func (s *Store) Purge(ctx context.Context, before time.Time) (queue.PurgeReport, error) {
	var r queue.PurgeReport
	conn, err := s.sessions.Acquire(ctx)
	if err != nil {
		return r, db.MapError(err, "queue: purge")
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, sqlTryPurgeLock).Scan(&locked); err != nil {
		return r, db.MapError(err, "queue: purge")
	}
	if !locked {
		return r, nil
	}
	defer func() {
		// A session lock outlives the call on a pooled connection: if it cannot be released,
		// the connection goes, and the lock with it.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, sqlPurgeUnlock); err != nil {
			_ = conn.Conn().Close(uctx)
		}
	}()
	if r.Tickets, err = purgeChunks(ctx, conn, sqlPurgeTickets, before); err != nil {
		return r, db.MapError(err, "queue: purge tickets")
	}
	if _, err = purgeChunks(ctx, conn, sqlPurgeProposals, before); err != nil {
		return r, db.MapError(err, "queue: purge proposals")
	}
	if r.Matches, err = purgeChunks(ctx, conn, sqlPurgeMatches, before); err != nil {
		return r, db.MapError(err, "queue: purge matches")
	}
	if _, err = purgeChunks(ctx, conn, sqlPurgeClaims, before); err != nil {
		return r, db.MapError(err, "queue: purge claims")
	}
	if r.Events, err = purgeEvents(ctx, conn, before); err != nil {
		return r, db.MapError(err, "queue: purge events")
	}
	return r, nil
}

// purgeChunks runs a delete of at most purgeChunk rows until it deletes fewer.
func purgeChunks(ctx context.Context, conn *pgxpool.Conn, stmt string, before time.Time) (int, error) {
	total := 0
	for {
		tag, err := conn.Exec(ctx, stmt, before, purgeChunk)
		if err != nil {
			return total, err
		}
		n := int(tag.RowsAffected())
		total += n
		if n < purgeChunk {
			return total, nil
		}
	}
}

func purgeEvents(ctx context.Context, conn *pgxpool.Conn, before time.Time) (int, error) {
	type bounds struct {
		queue    string
		from, to *int64
	}
	rows, err := conn.Query(ctx, sqlPurgeEventBounds, before)
	if err != nil {
		return 0, err
	}
	var all []bounds
	for rows.Next() {
		var b bounds
		if err := rows.Scan(&b.queue, &b.from, &b.to); err != nil {
			rows.Close()
			return 0, err
		}
		all = append(all, b)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	total := 0
	for _, b := range all {
		if b.from == nil || b.to == nil {
			continue
		}
		for lo := *b.from; lo <= *b.to; lo += purgeChunk {
			tag, err := conn.Exec(ctx, sqlPurgeEventRange, b.queue, lo, min(lo+purgeChunk-1, *b.to))
			if err != nil {
				return total, err
			}
			total += int(tag.RowsAffected())
		}
	}
	return total, nil
}
