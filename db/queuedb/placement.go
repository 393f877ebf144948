package queuedb

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// PlaceMatch implements queue.PlacementStore: one transaction in two round trips. The queue's
// row, then the match's, then its tickets, in the order every writer of the queue takes them;
// the match and the tickets still matched in it get the connection, each ticket a placed
// event.
func (s *Store) PlaceMatch(ctx context.Context, id string, connection json.RawMessage, at time.Time) (queue.Match, error) {
	at = at.Truncate(time.Microsecond)
	var m queue.Match
	err := db.InTx(ctx, s.pool, "queue: place match", func(conn *pgxpool.Conn) error {
		var found bool
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(`SELECT 1 FROM queues WHERE name = (SELECT queue FROM queue_matches WHERE id = $1) FOR NO KEY UPDATE`, id)
		b.Queue(`SELECT 1 FROM queue_matches WHERE id = $1 FOR UPDATE`, id).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				found = true
			}
			return rows.Err()
		})
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if !found {
			return apperr.New(apperr.NotFound, "no match %q", id)
		}
		var err error
		if m, err = s.getMatch(ctx, conn, id); err != nil {
			return err
		}
		if m.BackfillOf != "" {
			return apperr.New(apperr.Conflict, "match %q is a backfill's fill: its players join the running match %q", id, m.BackfillOf)
		}
		ids := m.Tickets()
		slices.Sort(ids)
		b = &pgx.Batch{}
		b.Queue(`UPDATE queue_matches SET connection = $2 WHERE id = $1`, id, string(connection))
		// The tickets still matched in it, locked by id, get the connection and an event each.
		b.Queue(`
WITH locked AS (
    SELECT t.id FROM unnest($1::text[]) AS u(id)
    CROSS JOIN LATERAL (SELECT id FROM queue_tickets WHERE id = u.id FOR UPDATE) AS t
), placed AS (
    UPDATE queue_tickets AS t
    SET assignment = jsonb_set(t.assignment, '{connection}', $3::jsonb)
    FROM locked
    WHERE t.id = locked.id AND t.status = 'matched' AND t.assignment->>'match_id' = $2
    RETURNING t.id, (t.assignment->>'team')::int AS team
), seq AS (
    UPDATE queues SET event_seq = event_seq + (SELECT count(*) FROM placed)
    WHERE name = $4
    RETURNING event_seq - (SELECT count(*) FROM placed) AS base
)
INSERT INTO queue_events (queue, seq, type, ticket_id, match_id, team, reason, at)
SELECT $4, seq.base + row_number() OVER (ORDER BY placed.id), 'placed', placed.id, $2, placed.team, '', $5
FROM seq, placed`, ids, id, string(connection), m.Queue, at)
		b.Queue(sqlNotify, m.Queue)
		b.Queue("COMMIT")
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return db.Committed(conn)
	})
	if err != nil {
		return queue.Match{}, err
	}
	m.Connection = connection
	return m, nil
}

// allocatorJSON is a queue's allocator column.
type allocatorJSON struct {
	URL       string `json:"url"`
	Secret    string `json:"secret"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// allocatorDoc is a queue's allocator column: NULL without one.
func allocatorDoc(q queue.Queue) *string {
	if q.Allocator == nil {
		return nil
	}
	b, err := json.Marshal(allocatorJSON{URL: q.Allocator.URL, Secret: q.Allocator.Secret, TimeoutMS: q.Allocator.Timeout.Milliseconds()})
	if err != nil {
		panic(err) // strings and a number
	}
	return new(string(b))
}
