package queuesvc_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
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
			f := newFixture(t, queuesvc.Config{DefinitionTTL: tc.ttl})
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
			f.clock.Advance(tc.wait) // the definition read this long ago
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

// A definition is read without its secrets; put back as read (or with other changes), it
// keeps the webhook's and the allocator's secrets for the same URLs. A new URL needs its own.
func TestPutKeepsTheSecretsOfTheSameURLs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, queuesvc.Config{WebhookAllow: loopback})
	const hook, alloc = "http://127.0.0.1:9/hook", "http://127.0.0.1:9/allocate"
	q := f.queue(t, func(q *queue.Queue) {
		q.Webhook = &queue.Webhook{URL: hook, Secret: "webhook-secret-0123456789"}
		q.Allocator = &queue.Allocator{URL: alloc, Secret: "allocator-secret-0123456789", Timeout: 5 * time.Second}
	})

	asRead := q // what GET shows: the URLs without their secrets
	asRead.Webhook = &queue.Webhook{URL: hook}
	asRead.Allocator = &queue.Allocator{URL: alloc, Timeout: 5 * time.Second}
	asRead.TicketTTL = 2 * time.Minute
	if _, created, err := f.svc.PutQueue(ctx, asRead); err != nil || created {
		t.Fatalf("put back as read: %v (created %v)", err, created)
	}
	stored, err := f.store.GetQueue(ctx, q.Name)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Webhook == nil || stored.Webhook.Secret != "webhook-secret-0123456789" ||
		stored.Allocator == nil || stored.Allocator.Secret != "allocator-secret-0123456789" {
		t.Fatalf("the secrets were not kept: webhook %+v allocator %+v", stored.Webhook, stored.Allocator)
	}
	if stored.TicketTTL != 2*time.Minute {
		t.Fatalf("the change made with them was not stored: ticket TTL %v", stored.TicketTTL)
	}

	moved := asRead
	moved.Webhook = &queue.Webhook{URL: "http://127.0.0.1:9/elsewhere"}
	_, _, err = f.svc.PutQueue(ctx, moved)
	if fe := fieldOf(err); fe != "webhook.secret" {
		t.Fatalf("a new webhook url without a secret: %v, want a 400 naming webhook.secret", err)
	}
	fresh := asRead
	fresh.Name, fresh.Allocator = "never-stored", nil
	_, _, err = f.svc.PutQueue(ctx, fresh)
	if fe := fieldOf(err); fe != "webhook.secret" {
		t.Fatalf("a new queue without a webhook secret: %v, want a 400 naming webhook.secret", err)
	}
}

// fieldOf is the only field an Invalid error names ("" otherwise).
func fieldOf(err error) string {
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.Invalid || len(e.Fields) != 1 {
		return ""
	}
	return e.Fields[0].Field
}

// gatedDefinitions holds every read of a queue definition until release is closed, and counts
// them.
type gatedDefinitions struct {
	*memstore.Store
	reads   atomic.Int64
	release chan struct{}
}

func (g *gatedDefinitions) GetQueue(ctx context.Context, name string) (queue.Queue, error) {
	g.reads.Add(1)
	<-g.release
	return g.Store.GetQueue(ctx, name)
}

// Twenty creations (or stream openings) that find no cached definition while it is read share
// that one read: each used to read the queue itself, all at once whenever the cached one
// expired.
func TestConcurrentCallersShareOneReadOfTheDefinition(t *testing.T) {
	t.Parallel()
	store := &gatedDefinitions{Store: memstore.New(), release: make(chan struct{})}
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize = "ctf", 1, 1
	if _, _, err := store.PutQueue(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	svc := queuesvc.New(queuesvc.Deps{Store: store, Matcher: pairInOrder{},
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())})
	const callers = 20
	var started atomic.Int64
	errs := make(chan error, callers)
	for range callers {
		go func() {
			started.Add(1)
			errs <- svc.CheckQueue(context.Background(), "duel")
		}()
	}
	for started.Load() < callers || store.reads.Load() == 0 {
		runtime.Gosched()
	}
	for range 1000 { // let the others reach the read (or the wait for it)
		runtime.Gosched()
	}
	close(store.release)
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the definition for %d concurrent callers, want 1", n, callers)
	}
	if err := svc.CheckQueue(context.Background(), "nowhere"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("CheckQueue of an unknown queue: %v", err)
	}
}
