package queuedb

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// placeMatch applies MatchPlacement: one transaction in three round trips. The queue's row
// and the match's; its tickets; then the match and the tickets still matched in it get the
// connection, each ticket a placed event.
func (s *Store) placeMatch(ctx context.Context, c queue.MatchPlacement, at time.Time) (queue.Applied, error) {
	var a queue.Applied
	err := db.InTx(ctx, s.pool, "queue: place match", func(conn *pgxpool.Conn) error {
		ch := &change{at: at, cause: c, readFirst: true,
			lock: func(b *pgx.Batch) {
				b.Queue(`SELECT 1 FROM queues WHERE name = (SELECT queue FROM queue_matches WHERE id = $1) FOR NO KEY UPDATE`, c.Match)
			}}
		var err error
		if a.Change, err = s.run(ctx, conn, ch); err != nil {
			return err
		}
		a.Match = ch.matches[c.Match]
		a.Match.Connection = c.Connection
		return nil
	})
	if err != nil {
		return queue.Applied{}, err
	}
	return a, nil
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
