package queuesvc_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// countingStore counts the store's reads: of events, of the queue's newest event, of tickets
// one by one (one) and by the batch (batch). With oneRead, each read of one ticket also sends
// on it once it has returned, while the channel has room.
type countingStore struct {
	*memstore.Store
	events, heads, one, batch atomic.Int64
	oneRead                   chan struct{}
}

// countingDuel is a replica of the duel queue on a countingStore.
func countingDuel(t *testing.T) (*countingStore, *queuesvc.Service) {
	store := &countingStore{Store: memstore.New()}
	svc := duelReplica(store)
	putDuel(t, context.Background(), svc)
	return store, svc
}

// Events counts a read of the head alone (limit 0) in heads; a read of events with their
// tickets, in one round trip, in events and batch.
func (c *countingStore) Events(ctx context.Context, q string, after int64, limit int, tickets bool) (queue.EventPage, error) {
	switch {
	case limit <= 0:
		c.heads.Add(1)
	case tickets:
		c.batch.Add(1)
		fallthrough
	default:
		c.events.Add(1)
	}
	return c.Store.Events(ctx, q, after, limit, tickets)
}

func (c *countingStore) GetTicket(ctx context.Context, id string) (queue.Ticket, error) {
	c.one.Add(1)
	defer func() {
		select {
		case c.oneRead <- struct{}{}:
		default:
		}
	}()
	return c.Store.GetTicket(ctx, id)
}

// Two hundred long-polls and ten event streams wait on one queue while ten events that
// concern none of them happen: the store is read once per event batch, not once per waiter
// (each waiter used to read the queue's new events itself: 4,070 transactions for this);
// then the ticket of one long-poll changes, and that long-poll answers at once.
func TestWaitersShareOneReadOfTheEvents(t *testing.T) {
	t.Parallel()
	store := &countingStore{Store: memstore.New()}
	svc := duelReplica(store)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	putDuel(t, ctx, svc)
	const polls, streams, noise = 200, 10, 10
	ids := make([]string, polls)
	for i := range ids {
		tk, _, err := svc.CreateTicket(ctx, solo("duel", fmt.Sprintf("waiter-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = tk.ID
	}
	answered := make(chan queue.Ticket, polls)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			tk, err := svc.GetTicket(ctx, id, 30*time.Second)
			if err == nil && tk.Status != queue.Searching {
				answered <- tk
			}
		})
	}
	streamed := make(chan int, streams)
	for range streams {
		wg.Go(func() {
			got, after := 0, int64(0)
			for got < noise && ctx.Err() == nil {
				evs, err := svc.Events(ctx, "duel", after, 100, 30*time.Second)
				if err != nil {
					return
				}
				got += len(evs)
				if len(evs) > 0 {
					after = evs[len(evs)-1].Seq
				}
			}
			streamed <- got
		})
	}
	awaitFeeds(t, svc, "the waiters are not all in", func() bool {
		return queuesvc.WatchedTickets(svc, "duel") == polls && queuesvc.FeedWaiters(svc, "duel") == polls+streams
	})
	before := store.events.Load()
	for i := range noise {
		tk, _, err := svc.CreateTicket(ctx, solo("duel", fmt.Sprintf("noise-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CancelTicket(ctx, tk.ID); err != nil {
			t.Fatal(err)
		}
	}
	for range streams {
		if got := <-streamed; got != noise {
			t.Fatalf("a stream saw %d events, want %d", got, noise)
		}
	}
	reads := store.events.Load() - before
	t.Logf("%d reads of the events for %d events and %d waiters", reads, noise, polls+streams)
	if reads > 2*noise {
		t.Fatalf("%d reads of the events for %d events and %d waiters: the reads grow with the waiters", reads, noise, polls+streams)
	}
	start := time.Now()
	if _, err := svc.CancelTicket(ctx, ids[7]); err != nil {
		t.Fatal(err)
	}
	select {
	case tk := <-answered:
		if tk.ID != ids[7] || tk.Status != queue.Cancelled {
			t.Fatalf("answered %+v", tk)
		}
		t.Logf("the long-poll answered %v after its ticket changed", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("the long-poll of the changed ticket did not answer within 5 s")
	}
	if len(answered) != 0 {
		t.Fatalf("%d other long-polls answered", len(answered))
	}
	cancel()
	wg.Wait()
}

// A hundred long-polls whose tickets end in one commit, as a tick ends the tickets of its
// matches, are answered from one read of their tickets by the queue's feed: each long-poll
// used to read its own ticket as it woke, a hundred reads at once queued for the pool.
func TestLongPollsWokenTogetherShareOneReadOfTheirTickets(t *testing.T) {
	t.Parallel()
	const polls = 100
	store := &countingStore{Store: memstore.New(), oneRead: make(chan struct{}, polls)}
	svc := duelReplica(store)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	putDuel(t, ctx, svc)
	var end queue.TickWrite
	answered := make(chan queue.Ticket, polls)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range polls {
		tk, _, err := svc.CreateTicket(ctx, solo("duel", fmt.Sprintf("waiter-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		end.Expired = append(end.Expired, queue.Expiry{TicketID: tk.ID, Reason: "ttl"})
		wg.Go(func() {
			tk, err := svc.GetTicket(ctx, tk.ID, 30*time.Second)
			if err != nil {
				t.Error(err)
			}
			answered <- tk
		})
	}
	awaitFeeds(t, svc, "the long-polls are not all waiting", func() bool { return queuesvc.WatchedTickets(svc, "duel") == polls })
	// Each long-poll reads its ticket once its watch has begun: a read still to come when the
	// watches are all in would be counted as one to answer it.
	timeout := time.After(10 * time.Second)
	for i := range polls {
		select {
		case <-store.oneRead:
		case <-timeout:
			t.Fatalf("after 10 s: %d of %d long-polls have read their ticket", i, polls)
		}
	}
	one, batch := store.one.Load(), store.batch.Load()
	end.At = time.Now()
	if done, err := queue.CommitTick(ctx, store, "duel", end); err != nil || len(done.Expired) != polls {
		t.Fatalf("CommitTick: %+v, %v", done, err)
	}
	for range polls {
		if tk := <-answered; tk.Status != queue.Expired || tk.Reason != "ttl" {
			t.Fatalf("a long-poll answered %+v, want its ticket expired", tk)
		}
	}
	if reads := store.one.Load() - one; reads != 0 {
		t.Errorf("%d reads of single tickets to answer %d long-polls woken together, want none", reads, polls)
	}
	if reads := store.batch.Load() - batch; reads < 1 || reads > 2 {
		t.Errorf("%d batch reads of tickets for one commit's events, want 1 (or 2 if its events came in two reads)", reads)
	}
}

// duelReplica is a queue service (a replica) on store, its matcher pairing in order.
func duelReplica(store queue.Store) *queuesvc.Service {
	return queuesvc.New(queuesvc.Deps{Store: store, Matcher: pairInOrder{},
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())})
}

// putDuel defines the tests' 1v1 queue "duel" (game type ctf, solos) through svc.
func putDuel(t testing.TB, ctx context.Context, svc *queuesvc.Service) {
	t.Helper()
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize = "ctf", 1, 1
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
}

// A feed that only event streams follow reads the events alone: the tickets are read with
// them only for the long-polls that wait on some.
func TestAFeedOfStreamsReadsNoTickets(t *testing.T) {
	t.Parallel()
	store, svc := countingDuel(t)
	ctx := context.Background()
	got := make(chan int, 1)
	go func() {
		n, after := 0, int64(0)
		for n < 3 {
			evs, err := svc.Events(ctx, "duel", after, 100, 30*time.Second)
			if err != nil {
				t.Error(err)
				break
			}
			for _, e := range evs {
				after = e.Seq
			}
			n += len(evs)
		}
		got <- n
	}()
	// The feed reads the head before it tells that it knows it (a change of the feeds).
	awaitFeeds(t, svc, "the stream never began to read", func() bool { return store.events.Load() > 0 || store.heads.Load() > 0 })
	for i := range 3 {
		cancelledTicket(t, ctx, svc, fmt.Sprintf("p%d", i))
	}
	if n := <-got; n != 3 {
		t.Fatalf("the stream saw %d events, want 3", n)
	}
	if reads := store.batch.Load(); reads != 0 {
		t.Fatalf("%d reads of tickets with the events for a feed no long-poll waits on, want 0", reads)
	}
}

// A stream opened without a resume point starts after the newest event of this replica's
// feed of the queue when one runs, without a read of the store (a game client opens a stream
// per ticket), and after the store's newest event when none does.
func TestStreamsStartAtTheFeedsHead(t *testing.T) {
	t.Parallel()
	store, svc := countingDuel(t)
	ctx := context.Background()
	cancelledTicket(t, ctx, svc, "a") // event 1
	if start, err := svc.StreamStart(ctx, "duel"); err != nil || start != 1 || store.heads.Load() != 1 {
		t.Fatalf("no feed: start %d, %v, %d reads of the head, want 1 after one read", start, err, store.heads.Load())
	}
	if _, _, err := svc.StreamEvents(ctx, "duel", "", 1, 100, time.Millisecond); err != nil { // starts the feed
		t.Fatal(err)
	}
	heads := store.heads.Load()
	for range 100 {
		if start, err := svc.StreamStart(ctx, "duel"); err != nil || start != 1 {
			t.Fatalf("with the feed: start %d, %v, want 1", start, err)
		}
	}
	if n := store.heads.Load() - heads; n != 0 {
		t.Fatalf("100 streams read the head from the store %d times, with the feed running", n)
	}
	cancelledTicket(t, ctx, svc, "b") // event 2: the feed reads it
	awaitFeeds(t, svc, "the feed's head stays before event 2", func() bool {
		start, err := svc.StreamStart(ctx, "duel")
		if err != nil {
			t.Fatal(err)
		}
		return start == 2
	})
	if _, err := svc.StreamStart(ctx, "no such queue!"); err == nil {
		t.Fatal("a stream of a queue name that is no name starts")
	}
}

// downStore is a store whose waits for events fail while down is set, as its reads do on a
// database that is failing over.
type downStore struct {
	*memstore.Store
	down atomic.Bool
}

func (d *downStore) WaitEvents(ctx context.Context, q string, after int64) error {
	if d.down.Load() {
		return apperr.New(apperr.Unavailable, "the database cannot be reached")
	}
	return d.Store.WaitEvents(ctx, q, after)
}

// A feed whose wait for events fails (the database away) waits again once it is back: the
// events made meanwhile reach the stream that was waiting throughout.
func TestAFeedOutlivesAFailedWait(t *testing.T) {
	t.Parallel()
	store := &downStore{Store: memstore.New()}
	svc := duelReplica(store)
	ctx := context.Background()
	putDuel(t, ctx, svc)
	store.down.Store(true)
	got := make(chan []queue.Event, 1)
	go func() {
		evs, err := svc.Events(ctx, "duel", 0, 100, 30*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- evs
	}()
	awaitFeeds(t, svc, "the stream is not waiting", func() bool { return queuesvc.FeedWaiters(svc, "duel") == 1 })
	cancelledTicket(t, ctx, svc, "a") // event 1, while the waits fail
	store.down.Store(false)
	select {
	case evs := <-got:
		if len(evs) != 1 {
			t.Fatalf("the stream got %d events, want the one made while the database was away", len(evs))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream got nothing within 10 s of the store's return: its feed stopped at the failed wait")
	}
}
