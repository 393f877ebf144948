package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// leaseStore is the memory store with a lease to renew: it counts the Lead calls.
type leaseStore struct {
	*queue.MemoryStore
	leads atomic.Int64
}

func (s *leaseStore) Lead(ctx context.Context, name string) (bool, error) {
	s.leads.Add(1)
	return s.MemoryStore.Lead(ctx, name)
}

func (s *leaseStore) LeaseLeft(string) time.Duration { return time.Minute }
func (s *leaseStore) LeaseRenewal() time.Duration    { return 10 * time.Millisecond }

var _ queue.LeaseStore = (*leaseStore)(nil)

// A queue that ticks once a minute still renews its leader's lease every LeaseRenewal: the
// loop used to call Lead only at its ticks, and a lease shorter than the tick would run out
// between two of them (another replica would then take the queue at every tick).
func TestTheLoopRenewsTheLeaseBetweenSlowTicks(t *testing.T) {
	t.Parallel()
	store := &leaseStore{MemoryStore: queue.NewMemoryStore()}
	svc := queue.NewService(queue.Deps{Store: store, Matcher: pairInOrder{},
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()),
		Config:  queue.Config{QueueRefresh: time.Hour}})
	q := queue.DefaultQueue("slow")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, time.Minute
	if _, _, err := svc.PutQueue(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	runService(t, svc)
	waitUntil(t, "Lead was not called between two ticks a minute apart", func() bool { return store.leads.Load() >= 5 })
}
