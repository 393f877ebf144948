package queue

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkFeedSinceOtherKeys: what one event stream of a key (without the read scope) costs
// at each batch of 100 events of other keys' tickets, as every stream of the queue looks at
// every batch. "copy" is the batch copied whole and filtered after (as streams did before);
// "filtered" copies only the stream's own events (none here):
//
//	go test -run '^$' -bench FeedSinceOtherKeys -benchmem -count 6 ./internal/queue/
func BenchmarkFeedSinceOtherKeys(b *testing.B) {
	fs := newFeeds(nil)
	f := &feed{moved: make(chan struct{})}
	for i := range feedBuffer {
		f.buf = append(f.buf, Event{Queue: "q", Seq: int64(i + 1), Type: EventMatched, TicketID: fmt.Sprintf("tk-%026d", i),
			MatchID: fmt.Sprintf("mt-%026d", i/10), Owner: fmt.Sprintf("backend-%d", i%10)})
	}
	f.head = int64(feedBuffer)
	after := f.head - 100
	mine := eventScope{owner: "someone-else"}
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			evs, _, _, _ := fs.since(f, after, 100, eventScope{all: true})
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
			if evs, through, _, _ := fs.since(f, after, 100, mine); len(evs) != 0 || through != f.head {
				b.Fatal(len(evs), through)
			}
		}
	})
}

// BenchmarkStreamEncodesEvent: what a stream spends on the JSON of an event it sends: "each"
// encodes it for every stream (as before), "feed" takes the encoding the queue's feed made
// once for all of them.
//
//	go test -run '^$' -bench StreamEncodesEvent -benchmem -count 6 ./internal/queue/
func BenchmarkStreamEncodesEvent(b *testing.B) {
	e := Event{Queue: "q", Seq: 12345, Type: EventMatched, TicketID: "tk-0123456789abcdefghjkmnpqrs",
		MatchID: "mt-0123456789abcdefghjkmnpqrs", Team: 1, At: time.Now(), Owner: "backend-1"}
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			_ = EncodeEvent(e)
		}
	})
	shared := e
	shared.encoded = EncodeEvent(e)
	b.Run("feed", func(b *testing.B) {
		for b.Loop() {
			_ = EncodeEvent(shared)
		}
	})
}

// The feed's events carry the JSON a fresh encoding gives.
func TestFeedEncodesEventsAsEncodeEvent(t *testing.T) {
	t.Parallel()
	st := NewTestStore()
	ctx := t.Context()
	q := DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize = "ctf", 1, 1
	if _, _, err := st.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	fs := newFeeds(st)
	f, err := fs.acquire(ctx, "duel")
	if err != nil {
		t.Fatal(err)
	}
	defer fs.release(f)
	_, _, _, moved := fs.since(f, 0, 10, eventScope{all: true})
	now := time.Now()
	if _, _, err := st.CreateTicket(ctx, Ticket{ID: "t1", Queue: "duel", Status: Searching, Players: []Player{{ID: "alice", Rating: 1000}},
		CreatedAt: now, ExpiresAt: now.Add(time.Minute), UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CancelTicket(ctx, "t1", now); err != nil {
		t.Fatal(err)
	}
	<-moved
	evs, _, covered, _ := fs.since(f, 0, 10, eventScope{all: true})
	if !covered || len(evs) != 1 || evs[0].encoded == nil {
		t.Fatalf("the feed's events: %+v (covered %v)", evs, covered)
	}
	fresh := evs[0]
	fresh.encoded = nil
	if got, want := string(EncodeEvent(evs[0])), string(EncodeEvent(fresh)); got != want {
		t.Fatalf("the feed's encoding %s, want %s", got, want)
	}
}
