package queuesvc_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
)

// slowStatsStore holds every read of the stats until released, counting them and the
// tickets created.
type slowStatsStore struct {
	*memstore.Store
	reads, created atomic.Int64
	release        chan struct{}
}

func (s *slowStatsStore) PublishedStats(ctx context.Context, q string) ([]queue.Stats, error) {
	s.reads.Add(1)
	<-s.release
	return s.Store.PublishedStats(ctx, q)
}

func (s *slowStatsStore) CreateTicket(ctx context.Context, t queue.Ticket) (queue.Ticket, bool, error) {
	defer s.created.Add(1)
	return s.Store.CreateTicket(ctx, t)
}

// On a replica that does not lead the queue, the creations that find its stats snapshot
// stale share one read of it for their wait estimates: each used to read (and decode) it.
// In a bubble (testing/synctest), Wait returns once every creation is blocked: in the one
// read, held until released, or waiting for it; without the single flight all of them
// would be in reads.
func TestCreationsShareOneReadOfTheLeadersStats(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := &slowStatsStore{Store: memstore.New(), release: make(chan struct{})}
		svc := duelReplica(store)
		putDuel(t, ctx, svc)
		const n = 50
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if _, _, err := svc.CreateTicket(ctx, queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: fmt.Sprintf("p%d", i)}}}); err != nil {
					t.Error(err)
				}
			})
		}
		synctest.Wait()
		if got := store.created.Load(); got != n {
			t.Fatalf("%d of %d tickets stored before their estimates", got, n)
		}
		reads := store.reads.Load()
		close(store.release)
		wg.Wait()
		if reads != 1 {
			t.Fatalf("%d creations read the stats %d times, want once", n, reads)
		}
	})
}
