package queuefeed

import (
	"fmt"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
)

// BenchmarkFeedSinceOtherKeys: what one event stream of a key (without the read scope) costs
// at each batch of 100 events of other keys' tickets, as every stream of the queue looks at
// every batch. "copy" is the batch copied whole and filtered after (as streams did before);
// "filtered" copies only the stream's own events (none here):
//
//	go test -run '^$' -bench FeedSinceOtherKeys -benchmem -count 6 ./internal/queue/queuesvc/
func BenchmarkFeedSinceOtherKeys(b *testing.B) {
	fs := New(nil)
	f := &Feed{moved: make(chan struct{})}
	for i := range feedBuffer {
		f.buf.Append(queue.Event{Queue: "q", Seq: int64(i + 1), Type: queue.EventMatched, TicketID: fmt.Sprintf("tk-%026d", i),
			MatchID: fmt.Sprintf("mt-%026d", i/10), Owner: fmt.Sprintf("backend-%d", i%10)})
	}
	after := f.buf.Head() - 100
	mine := Scope{Owner: "someone-else"}
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			evs, _, _, _ := fs.Since(f, after, 100, Scope{All: true})
			kept := evs[:0:0]
			for _, e := range evs {
				if mine.keeps(e) {
					kept = append(kept, e)
				}
			}
			if len(kept) != 0 {
				b.Fatal(len(kept))
			}
		}
	})
	b.Run("filtered", func(b *testing.B) {
		for b.Loop() {
			if evs, through, _, _ := fs.Since(f, after, 100, mine); len(evs) != 0 || through != f.buf.Head() {
				b.Fatal(len(evs), through)
			}
		}
	})
}

// The feed's events carry the JSON a fresh encoding gives.
func TestFeedEncodesEventsAsEncodeEvent(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	ctx := t.Context()
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize = "ctf", 1, 1
	if _, _, err := st.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	fs := New(st)
	f, err := fs.Acquire(ctx, "duel")
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Release(f)
	_, _, _, moved := fs.Since(f, 0, 10, Scope{All: true})
	now := time.Now()
	if _, _, err := st.CreateTicket(ctx, queue.Ticket{ID: "t1", Queue: "duel", Status: queue.Searching, Players: []queue.Player{{ID: "alice", Rating: 1000}},
		CreatedAt: now, ExpiresAt: now.Add(time.Minute), UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.CancelTicket(ctx, st, "t1", now); err != nil {
		t.Fatal(err)
	}
	<-moved
	evs, _, covered, _ := fs.Since(f, 0, 10, Scope{All: true})
	if !covered || len(evs) != 1 || evs[0].Encoding() == nil {
		t.Fatalf("the feed's events: %+v (covered %v)", evs, covered)
	}
	e := evs[0]
	fresh := queue.Event{Queue: e.Queue, Seq: e.Seq, Type: e.Type, TicketID: e.TicketID, MatchID: e.MatchID, Team: e.Team,
		Reason: e.Reason, At: e.At, Owner: e.Owner} // without the feed's encoding
	if got, want := string(queue.EncodeEvent(evs[0])), string(queue.EncodeEvent(fresh)); got != want {
		t.Fatalf("the feed's encoding %s, want %s", got, want)
	}
}
