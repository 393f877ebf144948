package queue

import (
	"testing"
	"time"
)

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
