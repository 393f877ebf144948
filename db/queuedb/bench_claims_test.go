package queuedb_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// BenchmarkQueueCreateExclusiveTicket is BenchmarkQueueCreateTicket's creations made exclusive,
// beside 10,000 live claims of other players: what a batch pays for the claims lock taken
// shared and the read of its players' claims (create_claims.go). Interleave it with the
// build before the change (this file and bench_test.go compile there too):
//
//	go test -run '^$' -bench QueueCreateExclusiveTicket -cpu 16 -count 1 ./db/queuedb/
//
// with TEST_DATABASE_URL set; the metrics as BenchmarkQueueCreateTicket's.
func BenchmarkQueueCreateExclusiveTicket(b *testing.B) {
	qs, s := openQueueStore(b)
	ctx := context.Background()
	q := queue.DefaultQueue("bench")
	q.GameType = "ctf"
	if _, _, err := qs.PutQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	if _, err := s.Pool().Exec(ctx, `
INSERT INTO queue_claims (player_id, ticket_id, match_id, queue, until)
SELECT 'claimed-' || i, 'tk-claimed-' || i, 'mt-' || (i / 2), 'other', $1 FROM generate_series(1, 10000) AS i`,
		now.Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	benchCreates(b, qs, s.Pool(), now, func(tk *queue.Ticket) { tk.Exclusive = true })
}
