package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// BenchmarkQueueCommitTick: one tick's write of 1,000 5v5 matches of solo exclusive tickets
// (10,000 tickets matched and claimed, 10,000 events), in a queue that has them and 10,000
// more searching, in the memory store (db/queuedb's benchmark of the same name is
// Postgres's):
//
//	go test -run '^$' -bench QueueCommitTick -benchtime 5x -count 6 ./internal/queue/memstore
func BenchmarkQueueCommitTick(b *testing.B) {
	const matches = 1000
	st := memstore.New()
	ctx := context.Background()
	q := queue.DefaultQueue("bench")
	q.GameType = "ctf"
	if _, _, err := st.PutQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	seed := func(prefix string) []queue.Ticket {
		out := make([]queue.Ticket, 10*matches)
		for i := range out {
			t := queuetest.Ticket("bench", fmt.Sprintf("%s%d", prefix, i), 1, fmt.Sprintf("%sp%d", prefix, i))
			t.Exclusive = true
			if _, _, err := st.CreateTicket(ctx, t); err != nil {
				b.Fatal(err)
			}
			out[i] = t
		}
		return out
	}
	seed("other")
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ts := seed(fmt.Sprintf("i%d-", i))
		w := queue.TickWrite{At: queuetest.T0.Add(time.Minute)}
		for m := range matches {
			w.Matches = append(w.Matches, queuetest.Match2v2(fmt.Sprintf("m%d-%d", i, m), ts[10*m], ts[10*m+1]))
			mt := &w.Matches[len(w.Matches)-1]
			for k := 2; k < 10; k++ {
				p := ts[10*m+k].Players[0]
				mt.Teams[k%2].Players = append(mt.Teams[k%2].Players, queue.MatchPlayer{ID: p.ID, TicketID: ts[10*m+k].ID, Rating: p.Rating})
			}
		}
		b.StartTimer()
		done, err := queue.CommitTick(ctx, st, "bench", w)
		if err != nil || len(done.Matches) != matches {
			b.Fatalf("%d matches stored, %v", len(done.Matches), err)
		}
	}
}
