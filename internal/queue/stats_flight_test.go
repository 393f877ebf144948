package queue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

func (s *slowStatsStore) LatestStats(ctx context.Context, q string) (queue.Stats, bool, error) {
	s.reads.Add(1)
	<-s.release
	return s.Store.LatestStats(ctx, q)
}

func (s *slowStatsStore) CreateTicket(ctx context.Context, t queue.Ticket) (queue.Ticket, bool, error) {
	defer s.created.Add(1)
	return s.Store.CreateTicket(ctx, t)
}

// On a replica that does not lead the queue, the creations that find its stats snapshot
// stale share one read of it for their wait estimates: each used to read (and decode) it.
func TestCreationsShareOneReadOfTheLeadersStats(t *testing.T) {
	t.Parallel()
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
	deadline := time.Now().Add(10 * time.Second)
	for store.created.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tickets stored after 10 s", store.created.Load(), n)
		}
		time.Sleep(time.Millisecond) // polling a condition, with a deadline
	}
	// Each creation is past its store write, on its way to the estimate: without the single
	// flight every one of them reaches the store's read, which this waits for (briefly: with
	// it, only one ever does).
	for wait := time.Now().Add(500 * time.Millisecond); store.reads.Load() < n && time.Now().Before(wait); {
		time.Sleep(time.Millisecond)
	}
	close(store.release)
	wg.Wait()
	if got := store.reads.Load(); got != 1 {
		t.Fatalf("%d creations read the stats %d times, want once", n, got)
	}
}
