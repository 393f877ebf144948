package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Ticket creations use the queue definition this replica read within DefinitionTTL: a change
// made through another replica (here: straight into the store) is seen once the read is that
// old, one made through this replica at once.
func TestCreationsReadTheDefinitionAtMostOncePerTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		wait time.Duration
		// a party of two is still refused after another replica allowed parties
		staleAfterOtherReplica bool
	}{
		{"within the TTL", time.Hour, 0, true},
		{"past the TTL", 10 * time.Millisecond, 20 * time.Millisecond, false},
		{"read per ticket", -1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, queue.Config{DefinitionTTL: tc.ttl})
			ctx := context.Background()
			q := f.queue(t, nil) // team_size 1: no parties
			n := 0
			party := func() error {
				n++
				_, _, err := f.svc.CreateTicket(ctx, queue.NewTicket{Queue: q.Name, Players: []queue.NewPlayer{
					{ID: "a" + string(rune('0'+n)), Rating: rating(1000)}, {ID: "b" + string(rune('0'+n)), Rating: rating(1000)}}})
				return err
			}
			if err := party(); apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("a party in a solo queue: %v, want Invalid", err)
			}
			duo := q
			duo.TeamSize, duo.MaxPartySize = 2, 2
			if _, _, err := f.store.PutQueue(ctx, duo); err != nil { // another replica allows parties
				t.Fatal(err)
			}
			time.Sleep(tc.wait)
			if err := party(); (apperr.CodeOf(err) == apperr.Invalid) != tc.staleAfterOtherReplica {
				t.Fatalf("after another replica's change: %v, want refused = %v", err, tc.staleAfterOtherReplica)
			}
			if _, _, err := f.svc.PutQueue(ctx, q); err != nil { // this replica takes parties away
				t.Fatal(err)
			}
			if err := party(); apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("after a PUT through this replica: %v, want Invalid at once", err)
			}
		})
	}
}
