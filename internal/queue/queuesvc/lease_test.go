package queuesvc_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// leaseStore is the memory store with a lease to renew: it counts the Lead calls.
type leaseStore struct {
	*memstore.Store
	leads atomic.Int64
}

func (s *leaseStore) Lead(ctx context.Context, name string) (bool, error) {
	s.leads.Add(1)
	return s.Store.Lead(ctx, name)
}

func (s *leaseStore) LeaseLeft(string) time.Duration { return time.Minute }
func (s *leaseStore) LeaseRenewal() time.Duration    { return 10 * time.Millisecond }

var _ queue.LeaseStore = (*leaseStore)(nil)

// A queue that ticks once a minute still renews its leader's lease every LeaseRenewal: the
// loop used to call Lead only at its ticks, and a lease shorter than the tick would run out
// between two of them (another replica would then take the queue at every tick).
func TestTheLoopRenewsTheLeaseBetweenSlowTicks(t *testing.T) {
	t.Parallel()
	store := &leaseStore{Store: memstore.New()}
	c := newClock()
	svc := queuesvc.New(queuesvc.Deps{Store: store, Matcher: pairInOrder{}, Clock: c,
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())})
	q := queue.DefaultQueue("slow")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, time.Minute
	if _, _, err := svc.PutQueue(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	runService(t, svc)
	ticked(t, c, svc, "slow")
	for i := range 4 { // each LeaseRenewal a renewal, the next tick a minute away
		waitTimer(t, c, store.LeaseRenewal(), fmt.Sprintf("renewal %d", i+1))
	}
	timerSet(t, c, store.LeaseRenewal(), "the fifth renewal")
	if n := store.leads.Load(); n != 5 {
		t.Fatalf("Lead called %d times by the first tick and four renewals, want 5", n)
	}
}

// cursorCountingStore counts the webhook cursor's writes.
type cursorCountingStore struct {
	*memstore.Store
	writes atomic.Int64
}

func (s *cursorCountingStore) SetWebhookCursor(ctx context.Context, name string, seq int64) error {
	s.writes.Add(1)
	return s.Store.SetWebhookCursor(ctx, name, seq)
}

// The webhook cursor is written once per batch of delivered events, where it was one UPDATE
// of the queue's row (the row the ticks lock) per event.
func TestWebhookCursorWrittenPerBatch(t *testing.T) {
	t.Parallel()
	const secret = "a-secret-of-16-bytes-or-more"
	rc, url := newReceiver(t, secret, func(int64, int) int { return http.StatusNoContent })
	store := &cursorCountingStore{Store: memstore.New()}
	c := newClock()
	cfg := queuesvc.Config{WebhookAllow: loopback}
	svc := queuesvc.New(queuesvc.Deps{Store: store, Matcher: pairInOrder{}, Clock: c, Outbound: posts(cfg),
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()), Config: cfg})
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	q.Webhook = &queue.Webhook{URL: url, Secret: secret}
	ctx := context.Background()
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	const players = 40
	for i := range players {
		if _, _, err := svc.CreateTicket(ctx, solo("duel", fmt.Sprintf("p%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	runService(t, svc) // the first tick matches them all: one event each
	rc.await(t, "not every event delivered", func(acked []int64, _ map[int64]int) bool { return len(acked) == players })
	timerSet(t, c, time.Second, "the deliverer's round after it delivered them")
	if cur, _ := store.WebhookCursor(ctx, "duel"); cur != players {
		t.Fatalf("the cursor is at %d, want %d", cur, players)
	}
	if acked, _ := rc.snapshot(); len(acked) != players {
		t.Fatalf("%d events acknowledged, want %d", len(acked), players)
	}
	if n := store.writes.Load(); n > 2 {
		t.Fatalf("%d cursor writes for %d events delivered in one batch, want 1 (2 if the batch took over a second)", n, players)
	}
}
