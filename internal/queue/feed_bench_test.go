package queue

import (
	"fmt"
	"testing"
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
	mine := func(e Event) bool { return e.Owner == "someone-else" }
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			evs, _, _, _ := fs.since(f, after, 100, nil)
			kept := evs[:0:0]
			for _, e := range evs {
				if mine(e) {
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
