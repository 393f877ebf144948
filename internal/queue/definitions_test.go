package queue_test

import (
	"context"
	"testing"
	"time"

	"matchmaker/internal/apperr"
	"matchmaker/internal/queue"
)

// Ticket creations use the queue definition this replica read within DefinitionTTL: a change
// made through another replica (here: straight into the store) is seen once it is that old,
// one made through this replica at once.
func TestCreationsReadTheDefinitionAtMostOncePerTTL(t *testing.T) {
	t.Parallel()
	const ttl = 100 * time.Millisecond
	f := newFixture(t, queue.Config{DefinitionTTL: ttl})
	ctx := context.Background()
	q := f.queue(t, nil) // team_size 1: no parties
	party := func(a, b string) error {
		_, _, err := f.svc.CreateTicket(ctx, queue.NewTicket{Queue: q.Name,
			Players: []queue.NewPlayer{{ID: a, Rating: rating(1000)}, {ID: b, Rating: rating(1000)}}})
		return err
	}
	if err := party("a1", "a2"); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("a party in a solo queue: %v, want Invalid", err)
	}

	// Another replica allows parties of two.
	duo := q
	duo.TeamSize, duo.MaxPartySize = 2, 2
	if _, _, err := f.store.PutQueue(ctx, duo); err != nil {
		t.Fatal(err)
	}
	read := time.Now()
	err := party("b1", "b2")
	if time.Since(read) < ttl/2 && apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("within the TTL the definition read before is used: %v, want Invalid", err)
	}
	time.Sleep(ttl)
	if err := party("c1", "c2"); err != nil {
		t.Fatalf("after the TTL: %v, want the new definition's party", err)
	}

	// This replica takes parties away again: at once.
	if _, _, err := f.svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := party("d1", "d2"); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("after a PUT through this replica: %v, want Invalid", err)
	}
}
