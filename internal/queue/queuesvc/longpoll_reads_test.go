package queuesvc_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

// A long-poll of a ticket whose queue the replica knows (it made the ticket, or read it
// before) reads the ticket once, after its watch begins, and so does one of a ticket it has
// never seen while it follows one queue only (it guesses that one); otherwise it reads the
// ticket to learn the queue, then again after the watch begins. Every long-poll gives its
// watch back as it answers: a ticket that has had its last event leaves none behind.
func TestLongPollReadsItsTicketOnce(t *testing.T) {
	t.Parallel()
	store := &countingStore{Store: memstore.New()}
	maker, other := duelReplica(store), duelReplica(store)
	ctx := context.Background()
	putDuel(t, ctx, maker)
	tk, _, err := maker.CreateTicket(ctx, solo("duel", "ann"))
	if err != nil {
		t.Fatal(err)
	}
	poll := func(name string, svc *queuesvc.Service, wantReads int64, want queue.Status) {
		t.Helper()
		before := store.one.Load()
		got, err := svc.GetTicket(ctx, tk.ID, 20*time.Millisecond) // no event comes: the wait runs out
		if err != nil || got.ID != tk.ID || got.Status != want {
			t.Fatalf("%s: %+v, %v; want the ticket %s", name, got, err, want)
		}
		if reads := store.one.Load() - before; reads != wantReads {
			t.Errorf("%s: %d reads of the ticket, want %d", name, reads, wantReads)
		}
		if n := queuesvc.WatchedTickets(svc, "duel"); n != 0 {
			t.Errorf("%s: %d watches left in the feed after the answer, want 0", name, n)
		}
	}
	poll("the replica that made it", maker, 1, queue.Searching)
	poll("another replica, first time", other, 2, queue.Searching)
	poll("another replica, again", other, 1, queue.Searching)

	// A replica whose one feed is the ticket's queue guesses it; one that follows another
	// queue guesses wrong, and waits in the ticket's queue from the read that told it.
	other2, _, err := maker.CreateTicket(ctx, solo("duel", "bob"))
	if err != nil {
		t.Fatal(err)
	}
	follower := duelReplica(store)
	if _, err := follower.GetTicket(ctx, other2.ID, time.Millisecond); err != nil { // its feed of duel lingers
		t.Fatal(err)
	}
	poll("a replica following the ticket's queue only", follower, 1, queue.Searching)
	elsewhere := duelReplica(store)
	side := queue.DefaultQueue("side")
	side.GameType, side.TeamSize, side.MaxPartySize = "ctf", 1, 1
	if _, _, err := maker.PutQueue(ctx, side); err != nil {
		t.Fatal(err)
	}
	sideTicket, _, err := maker.CreateTicket(ctx, solo("side", "cy"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := elsewhere.GetTicket(ctx, sideTicket.ID, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	poll("a replica following another queue only", elsewhere, 2, queue.Searching)

	// A queue remembered wrongly (a purged ticket's id made again elsewhere): the long-poll
	// still answers, from the ticket's own queue.
	stale := duelReplica(store)
	queuesvc.RememberTicketQueue(stale, tk.ID, "gone")
	poll("a replica remembering a deleted queue", stale, 2, queue.Searching)
	poll("the same replica, corrected", stale, 1, queue.Searching)

	if _, err := maker.CancelTicket(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	poll("a cancelled ticket", maker, 1, queue.Cancelled)
}

// Two long-polls share a ticket's watch: the first one's wait running out does not take the
// watch from the second, which answers at the ticket's next event.
func TestLongPollsOfOneTicketShareItsWatch(t *testing.T) {
	t.Parallel()
	svc := duelReplica(memstore.New())
	ctx := context.Background()
	putDuel(t, ctx, svc)
	tk, _, err := svc.CreateTicket(ctx, solo("duel", "ann"))
	if err != nil {
		t.Fatal(err)
	}
	long := make(chan queue.Ticket, 1)
	go func() {
		got, err := svc.GetTicket(ctx, tk.ID, 30*time.Second)
		if err != nil {
			t.Error(err)
		}
		long <- got
	}()
	awaitFeeds(t, svc, "the long-poll never began to wait", func() bool { return queuesvc.WatchedTickets(svc, "duel") == 1 })
	if got, err := svc.GetTicket(ctx, tk.ID, 10*time.Millisecond); err != nil || got.Status != queue.Searching {
		t.Fatalf("the short long-poll: %+v, %v", got, err)
	}
	if _, err := svc.CancelTicket(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-long:
		if got.Status != queue.Cancelled {
			t.Fatalf("the long long-poll answered %s, want cancelled", got.Status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long long-poll did not answer at the ticket's cancellation")
	}
}
