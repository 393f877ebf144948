package queuetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The contract of the event log: in order, waited for, read with their tickets, and the
// webhook's cursor.

// Events with the tickets returns what Events returns and, with them, each of their tickets
// once, as it is now: a long-poll woken by an event answers with it, without a read of its
// own.
func testFeedEvents(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	a := create(t, st, Ticket("q", "ta", 1, "a1", "a2"))
	b := create(t, st, Ticket("q", "tb", 2, "b1", "b2"))
	create(t, st, Ticket("q", "tc", 3, "c1"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "tc", at(4)))
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "q", queue.TickWrite{At: at(10), Matches: []queue.Match{Match2v2("m1", a, b)}}))
	head := must[queue.EventPage](t)(st.Events(c, "q", 0, 0, false)).Head
	page, err := st.Events(c, "q", head-3, 10, true)
	if err != nil {
		t.Fatal(err)
	}
	evs, tickets := page.Events, page.Tickets
	want := must[queue.EventPage](t)(st.Events(c, "q", head-3, 10, false)).Events
	if len(evs) != 3 || !reflect.DeepEqual(evs, want) {
		t.Fatalf("the events read with their tickets %+v, want those read without %+v", evs, want)
	}
	byID := map[string]queue.Ticket{}
	for _, tk := range tickets {
		byID[tk.ID] = tk
	}
	if len(tickets) != 3 || len(byID) != 3 {
		t.Fatalf("%d tickets for the events of tc, ta, tb, want each once: %+v", len(tickets), tickets)
	}
	for _, id := range []string{"ta", "tb", "tc"} {
		now := must[queue.Ticket](t)(st.GetTicket(c, id))
		if got := byID[id]; got.Status != now.Status || !got.UpdatedAt.Equal(now.UpdatedAt) ||
			!reflect.DeepEqual(got.Assignment, now.Assignment) || !reflect.DeepEqual(got.Players, now.Players) {
			t.Fatalf("the ticket %s read with its event: %+v, want it as GetTicket reads it: %+v", id, got, now)
		}
	}
	if page, err := st.Events(c, "q", head, 10, true); err != nil || len(page.Events) != 0 || len(page.Tickets) != 0 {
		t.Fatalf("after the head: %d events, %d tickets, %v; want none", len(page.Events), len(page.Tickets), err)
	}
	_, err = st.Events(c, "nope", 0, 10, true)
	wantCode(t, err, apperr.NotFound)
}

func testEvents(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	for i := range 5 {
		id := fmt.Sprintf("t%d", i)
		create(t, st, Ticket("q", id, i, "p"+id))
		must[queue.Ticket](t)(queue.CancelTicket(c, st, id, at(10+i)))
	}
	page := must[queue.EventPage](t)(st.Events(c, "q", 1, 2, false)).Events
	if len(page) != 2 || page[0].Seq != 2 || page[1].Seq != 3 || page[0].TicketID != "t1" || page[0].Queue != "q" {
		t.Fatalf("events after 1, 2 of them: %+v", page)
	}
	if rest := must[queue.EventPage](t)(st.Events(c, "q", 5, 10, false)).Events; len(rest) != 0 {
		t.Fatalf("events after the last: %+v", rest)
	}
	if head := must[queue.EventPage](t)(st.Events(c, "q", 0, 0, false)).Head; head != 5 {
		t.Fatalf("event head %d, want 5", head)
	}
	if err := st.WaitEvents(c, "q", 4); err != nil {
		t.Fatalf("an event after 4 exists: WaitEvents = %v", err)
	}
	short, cancel := context.WithTimeout(c, 50*time.Millisecond)
	defer cancel()
	if err := st.WaitEvents(short, "q", 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("nothing after 5: WaitEvents = %v, want the deadline", err)
	}
	woke := make(chan error, 1)
	go func() { woke <- st.WaitEvents(c, "q", 5) }()
	if w, ok := st.(interface{ Waiters(queue string) int }); ok { // the event comes to a waiter
		for deadline := time.Now().Add(5 * time.Second); w.Waiters("q") == 0 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	}
	create(t, st, Ticket("q", "t9", 20, "late"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "t9", at(21)))
	select {
	case err := <-woke:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitEvents did not wake up for a new event")
	}
}

func testWebhookCursor(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	if n := must[int64](t)(st.WebhookCursor(c, "q")); n != 0 {
		t.Fatalf("a new queue's cursor: %d", n)
	}
	if err := st.SetWebhookCursor(c, "q", 7); err != nil {
		t.Fatal(err)
	}
	if err := st.SetWebhookCursor(c, "q", 3); err != nil { // late acknowledgements never go back
		t.Fatal(err)
	}
	if n := must[int64](t)(st.WebhookCursor(c, "q")); n != 7 {
		t.Fatalf("cursor %d, want 7", n)
	}
}
