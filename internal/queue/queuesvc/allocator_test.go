package queuesvc_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

const allocatorSecret = "an-allocator-secret-of-16-bytes"

// allocatorFixture is a 1v1 queue without a ready check whose allocator is h.
func allocatorFixture(t *testing.T, h http.Handler, cfg queuesvc.Config) fixture {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f := newFixture(t, cfg)
	f.svc = queuesvc.New(queuesvc.Deps{Store: f.store, Ratings: f.ratings, Matcher: &uniqueIDs{}, Config: cfg, Clock: f.clock,
		Outbound: posts(cfg)})
	f.queue(t, func(q *queue.Queue) {
		q.Allocator = &queue.Allocator{URL: srv.URL, Secret: allocatorSecret, Timeout: 10 * time.Second}
	})
	return f
}

// uniqueIDs is pairInOrder with a new match id each time, as the production pass makes.
type uniqueIDs struct{ n atomic.Int64 }

func (u *uniqueIDs) Match(q queue.Queue, waiting []queue.Ticket, now time.Time) (queue.TickWrite, error) {
	w, err := pairInOrder{}.Match(q, waiting, now)
	for i := range w.Matches {
		w.Matches[i].ID += "-" + strconv.FormatInt(u.n.Add(1), 10)
	}
	return w, err
}

// waitPlacing long-polls ticket id until it is placing, in a match other than not.
func waitPlacing(t *testing.T, svc *queuesvc.Service, id, not string) queue.Ticket {
	t.Helper()
	tk := waitFor(t, svc, id, queue.Placing)
	if tk.Proposal.MatchID == not {
		t.Fatalf("ticket %s is still placing in %s", id, not)
	}
	return tk
}

// verified checks an allocation request's signature as a receiver would.
func verified(r *http.Request, body []byte) bool {
	sig := r.Header.Get(queue.SignatureHeader)
	ts, _, ok := strings.Cut(strings.TrimPrefix(sig, "t="), ",")
	at, err := strconv.ParseInt(ts, 10, 64)
	return ok && err == nil && sig == queue.Sign(allocatorSecret, at, r.Header.Get(queue.DeliveryHeader), body)
}

// An allocator that fails twice and then answers places the match: its tickets are matched
// with the connection, after being placing meanwhile.
func TestAllocatorFailsTwiceThenAnswers(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var matchID atomic.Value
	f := allocatorFixture(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			MatchID string `json:"match_id"`
			Teams   []struct {
				Players []struct{ ID string } `json:"players"`
			} `json:"teams"`
		}
		if !verified(r, body) || json.Unmarshal(body, &req) != nil || len(req.Teams) != 2 || r.Header.Get(queue.DeliveryHeader) != req.MatchID {
			t.Errorf("a bad allocation request: %s %v", body, r.Header)
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		matchID.Store(req.MatchID)
		if calls.Add(1) <= 2 {
			http.Error(w, "no server yet", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"connection": {"address": "10.0.0.7", "port": 7777}}`)
	}), queuesvc.Config{WebhookAllow: loopback})
	ctx := context.Background()
	a, _, _ := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	f.svc.CreateTicket(ctx, solo("duel", "bob"))
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel") // the first tick makes the match placing
	f.advance(t, 50*time.Millisecond) // the next one starts placing it on the allocator
	waitTimer(t, f.clock, 250*time.Millisecond, "the allocator's first backoff")
	waitTimer(t, f.clock, 500*time.Millisecond, "the allocator's second backoff")
	got := waitFor(t, f.svc, a.ID, queue.Matched)
	if got.Assignment == nil || string(got.Assignment.Connection) != `{"address":"10.0.0.7","port":7777}` || calls.Load() != 3 {
		t.Fatalf("alice's assignment after %d calls: %+v", calls.Load(), got.Assignment)
	}
	if m, err := f.svc.GetMatch(ctx, matchID.Load().(string)); err != nil || string(m.Connection) != `{"address":"10.0.0.7","port":7777}` {
		t.Fatalf("the placed match: %+v %v", m, err)
	}
}

// An allocator that never answers: at the placement's deadline the players search again, their
// wait kept, with a requeued event naming the timeout; the studio's backend may answer in the
// allocator's stead, or fail the placement.
func TestAllocatorThatNeverAnswers(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	f := allocatorFixture(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers: the service gives up on each request
		case <-r.Context().Done():
		case <-stop:
		}
	}), queuesvc.Config{WebhookTimeout: 100 * time.Millisecond, WebhookAllow: loopback})
	t.Cleanup(func() { close(stop) }) // before the server's Close, which waits for its handlers
	ctx := context.Background()
	a, _, _ := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	f.svc.CreateTicket(ctx, solo("duel", "bob"))
	runService(t, f.svc)
	placing := waitFor(t, f.svc, a.ID, queue.Placing)
	first := placing.Proposal.MatchID
	f.advance(t, 10*time.Second) // the deadline
	requeued := waitEvent(t, f.svc, a.ID, queue.EventRequeued)
	if requeued.Reason != queue.ReasonPlacementTimeout || requeued.MatchID != first {
		t.Fatalf("the requeued event: %+v", requeued)
	}
	// The next tick makes the match again, placing it anew; the studio answers for the allocator.
	f.advance(t, 50*time.Millisecond)
	again := waitPlacing(t, f.svc, a.ID, first)
	if !again.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("alice lost her wait: %v, was %v", again.CreatedAt, a.CreatedAt)
	}
	if _, err := f.svc.FailPlacement(ctx, again.Proposal.MatchID, "no server in eu"); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, f.svc, a.ID, queue.EventRequeued, again.Proposal.MatchID); ev.Reason != "placement_failed: no server in eu" {
		t.Fatalf("the failed placement's event: %+v", ev)
	}
	f.advance(t, 50*time.Millisecond)
	third := waitPlacing(t, f.svc, a.ID, again.Proposal.MatchID)
	m, err := f.svc.Place(ctx, third.Proposal.MatchID, json.RawMessage(`{"address": "10.0.0.9"}`))
	if err != nil || string(m.Connection) != `{"address":"10.0.0.9"}` {
		t.Fatalf("the studio's placement: %+v %v", m, err)
	}
	if got := waitFor(t, f.svc, a.ID, queue.Matched); string(got.Assignment.Connection) != `{"address":"10.0.0.9"}` {
		t.Fatalf("alice's assignment: %+v", got.Assignment)
	}
}

// waitEvent waits for an event of type typ about ticket id (of match, if given), reading the
// queue's events from the first, and each batch as it comes.
func waitEvent(t *testing.T, svc *queuesvc.Service, id string, typ queue.EventType, match ...string) queue.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var after int64
	for {
		evs, err := svc.Events(ctx, "duel", after, 1000, time.Second)
		if err != nil {
			t.Fatalf("no %s event for %s: %v", typ, id, err)
		}
		for _, e := range evs {
			if e.TicketID == id && e.Type == typ && (len(match) == 0 || e.MatchID == match[0]) {
				return e
			}
			after = e.Seq
		}
	}
}
