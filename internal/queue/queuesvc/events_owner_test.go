package queuesvc_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

// A key's event stream shows its own tickets' events only; an admin or read key, and the
// service itself, see every ticket's. A stream whose queue moved only with others' tickets
// waits out its wait instead of spinning on them.
func TestEventsShowAKeyItsOwnTickets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	f.queue(t, nil)
	ctx := context.Background()
	a := queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: "studio-a"})
	b := queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: "studio-b"})
	ops := queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: "ops", Admin: true})
	dash := queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: "dash", Reader: true})
	create := func(ctx context.Context, player string) string {
		tk, _, err := f.svc.CreateTicket(ctx, queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: player}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.CancelTicket(ctx, tk.ID); err != nil {
			t.Fatal(err)
		}
		return tk.ID
	}
	alice, bob := create(a, "alice"), create(b, "bob")
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want []string
	}{
		{"studio-a", a, []string{alice}},
		{"studio-b", b, []string{bob}},
		{"admin", ops, []string{alice, bob}},
		{"read", dash, []string{alice, bob}},
		{"the service", ctx, []string{alice, bob}},
	} {
		for _, wait := range []time.Duration{0, time.Second} {
			evs, err := f.svc.Events(tt.ctx, "duel", 0, 100, wait)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.TicketID)
			}
			if len(got) != len(tt.want) || got[0] != tt.want[0] || got[len(got)-1] != tt.want[len(tt.want)-1] {
				t.Errorf("%s (wait %v) sees %v, want %v", tt.name, wait, got, tt.want)
			}
		}
	}
	// Past alice's event the queue holds only bob's: studio-a's wait passes over it and
	// ends empty at its deadline.
	start := time.Now()
	evs, err := f.svc.Events(a, "duel", 1, 100, 200*time.Millisecond)
	if err != nil || len(evs) != 0 || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("studio-a past its own event: %+v %v after %v", evs, err, time.Since(start))
	}
}

// A key's stream that follows the queue's feed gets its own tickets' events from a batch
// that is mostly another key's, and, with a limit, its first ones only, then the rest.
func TestAKeysStreamPicksItsEventsOutOfOthers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	f.queue(t, nil)
	ctx := context.Background()
	a := queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: "studio-a"})
	b := queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: "studio-b"})
	head, err := f.svc.EventHead(ctx, "duel")
	if err != nil {
		t.Fatal(err)
	}
	// A first wait starts the queue's feed, which keeps reading a while after it: the
	// events below are read from its buffer.
	if evs, err := f.svc.Events(a, "duel", head, 2, time.Millisecond); err != nil || len(evs) != 0 {
		t.Fatalf("%+v, %v", evs, err)
	}
	var mine []string
	for i := range 150 {
		owner, who := b, "b"
		if i%50 == 49 {
			owner, who = a, "a"
		}
		tk, _, err := f.svc.CreateTicket(owner, solo("duel", fmt.Sprintf("%s-%d", who, i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.CancelTicket(owner, tk.ID); err != nil {
			t.Fatal(err)
		}
		if who == "a" {
			mine = append(mine, tk.ID)
		}
	}
	var got []string
	for after := head; len(got) < len(mine); {
		evs, err := f.svc.Events(a, "duel", after, 2, 5*time.Second)
		if err != nil || len(evs) == 0 || len(evs) > 2 {
			t.Fatalf("studio-a's stream after %d: %+v, %v", after, evs, err)
		}
		for _, e := range evs {
			got = append(got, e.TicketID)
		}
		after = evs[len(evs)-1].Seq
	}
	if fmt.Sprint(got) != fmt.Sprint(mine) {
		t.Fatalf("studio-a's stream read %v, want %v", got, mine)
	}
}

// streamReads counts the store's reads of events of a stream's size (100), not the feed's
// (1,000).
type streamReads struct {
	*memstore.Store
	reads atomic.Int64
}

func (s *streamReads) Events(ctx context.Context, q string, after int64, limit int, tickets bool) (queue.EventPage, error) {
	if limit == 100 {
		s.reads.Add(1)
	}
	return s.Store.Events(ctx, q, after, limit, tickets)
}

// countedDuel is a replica of the duel queue on a store that counts the streams' reads.
func countedDuel(t *testing.T) (*streamReads, *queuesvc.Service) {
	store := &streamReads{Store: memstore.New()}
	svc := duelReplica(store)
	putDuel(t, context.Background(), svc)
	return store, svc
}

// cancelledTicket creates player's ticket in the duel queue under ctx and cancels it: one
// event.
func cancelledTicket(t *testing.T, ctx context.Context, svc *queuesvc.Service, player string) {
	tk, _, err := svc.CreateTicket(ctx, solo("duel", player))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CancelTicket(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
}

// A key's stream that sees none of the queue's events while other keys' go by by the
// thousand keeps its place with the feed (StreamEvents' through), rather than at its last
// own event: it never falls behind the feed's buffer into reading the store. (2,000 streams
// of one key did, 20 s into a soak, all at once, and took the pool.)
func TestAStreamKeepsItsPlacePastOtherKeysEvents(t *testing.T) {
	t.Parallel()
	store, svc := countedDuel(t)
	ctx := context.Background()
	a := queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: "studio-a"})
	b := queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: "studio-b"})
	after, err := svc.EventHead(ctx, "duel")
	if err != nil {
		t.Fatal(err)
	}
	// The stream's first wait starts the queue's feed.
	if evs, through, err := svc.StreamEvents(a, "duel", "", after, 100, time.Millisecond); err != nil || len(evs) != 0 || through != after {
		t.Fatalf("studio-a's first wait: %+v, through %d, %v", evs, through, err)
	}
	for round := range 6 { // 6,000 events: more than the feed keeps
		for i := range 1000 {
			cancelledTicket(t, b, svc, fmt.Sprintf("b-%d-%d", round, i))
		}
		head, err := svc.EventHead(ctx, "duel")
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); after < head; { // the stream's waits
			var evs []queue.Event
			if evs, after, err = svc.StreamEvents(a, "duel", "", after, 100, 10*time.Millisecond); err != nil || len(evs) != 0 {
				t.Fatalf("studio-a's stream: %+v, %v", evs, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("studio-a's stream at %d after 10 s, the queue at %d", after, head)
			}
		}
	}
	if n := store.reads.Load(); n != 0 {
		t.Fatalf("studio-a's stream read the store %d times: it fell behind the feed", n)
	}
}

// A stream of one ticket's events (a game client's) reads that ticket's events only, keeps
// its place while thousands of others go by during its waits (no read of the store: woken by
// none of them, it would otherwise fall behind the feed's buffer), and refuses a filter that
// is not a ticket id, naming the field.
func TestAStreamOfOneTicketReadsItsEventsOnly(t *testing.T) {
	t.Parallel()
	store, svc := countedDuel(t)
	ctx := context.Background()
	a := queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: "studio-a"})
	mine, _, err := svc.CreateTicket(a, solo("duel", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := svc.EventHead(ctx, "duel")
	if err != nil {
		t.Fatal(err)
	}
	// The stream's first wait starts the queue's feed.
	if evs, through, err := svc.StreamEvents(a, "duel", mine.ID, after, 100, time.Millisecond); err != nil || len(evs) != 0 || through != after {
		t.Fatalf("the first wait of the stream of %s: %+v, through %d, %v", mine.ID, evs, through, err)
	}
	// Then it waits, a second at a time, as studio-a's other tickets make 24,000 events
	// (the feed keeps at most 8,192), then reads the cancel of its own.
	var produced atomic.Bool
	read := make(chan error, 1)
	go func() {
		for cur := after; ; {
			evs, through, err := svc.StreamEvents(a, "duel", mine.ID, cur, 100, time.Second)
			switch {
			case err != nil:
				read <- err
				return
			case len(evs) > 0 && (len(evs) != 1 || evs[0].TicketID != mine.ID || evs[0].Type != queue.EventCancelled):
				read <- fmt.Errorf("the stream read %+v, want the cancel of %s alone", evs, mine.ID)
				return
			case len(evs) > 0:
				read <- nil
				return
			}
			cur = through
			if produced.Load() {
				if _, err := svc.CancelTicket(a, mine.ID); err != nil {
					read <- err
					return
				}
			}
		}
	}()
	for i := range 24_000 {
		cancelledTicket(t, a, svc, fmt.Sprintf("a-%d", i))
	}
	produced.Store(true)
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not read its ticket's cancel in 30 s")
	}
	if n := store.reads.Load(); n != 0 {
		t.Fatalf("the stream read the store %d times: it fell behind the feed", n)
	}
	_, _, err = svc.StreamEvents(a, "duel", "tk-\x00", after, 100, time.Millisecond)
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.Invalid || len(ae.Fields) != 1 || ae.Fields[0].Field != "ticket" {
		t.Fatalf("a filter that is not a ticket id: %v, want a 400 naming ticket", err)
	}
}
