package queuesvc_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// expiryCounter is the memory store counting its ExpireProposals (DeadlinesPassed applied)
// at each time: the queue-wide deadlines of a partitioned queue are expired by one runner,
// once a tick.
type expiryCounter struct {
	*memstore.Store
	mu     sync.Mutex
	calls  map[time.Time]int
	called signal
}

func (s *expiryCounter) Apply(ctx context.Context, at time.Time, cause queue.Cause) (queue.Applied, error) {
	if _, ok := cause.(queue.DeadlinesPassed); ok {
		s.mu.Lock()
		s.calls[at]++
		s.mu.Unlock()
		s.called.notify()
	}
	return s.Store.Apply(ctx, at, cause)
}

// expiredAt waits for a call at the clock's time: the queue's tick at that time has read its
// clock, and the test may move it on without a tick that straddles the move (one that read
// the new time after it began at the old would be a second call at the new time).
func (s *expiryCounter) expiredAt(t *testing.T, at time.Time) {
	t.Helper()
	if !s.called.await(func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.calls[at] > 0
	}) {
		t.Fatalf("no expiry of the queue's proposals at %v after 10 s", at)
	}
}

// twice are the times ExpireProposals was called at more than once.
func (s *expiryCounter) twice() map[time.Time]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[time.Time]int{}
	for at, n := range s.calls {
		if n > 1 {
			out[at] = n
		}
	}
	return out
}

// moded is a solo ticket of mode in queue modes.
func moded(player, mode string) queue.NewTicket {
	return queue.NewTicket{Queue: "modes", Players: []queue.NewPlayer{{ID: player}},
		Attributes: map[string]matchrules.Value{"mode": matchrules.StringValue(mode)}}
}

func modesProposals(t *testing.T, m *queuesvc.Metrics, outcome string) float64 {
	t.Helper()
	var out dto.Metric
	if err := queuesvc.ProposalsCounter(m).WithLabelValues("modes", outcome).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

// proposedWith waits for ticket id to be proposed and returns its proposal's other ticket.
func proposedWith(t *testing.T, svc *queuesvc.Service, store queue.ProposalStore, id string) (queue.Ticket, string) {
	t.Helper()
	tk := waitFor(t, svc, id, queue.Proposed)
	p, err := store.GetProposal(context.Background(), tk.Proposal.MatchID)
	if err != nil {
		t.Fatal(err)
	}
	other := slices.DeleteFunc(p.Match.Tickets(), func(x string) bool { return x == id })
	if len(other) != 1 {
		t.Fatalf("proposal %s of %s: tickets %v", tk.Proposal.MatchID, id, p.Match.Tickets())
	}
	return tk, other[0]
}

// A queue partitioned by mode with a ready check: each partition proposes its own tickets; an
// accepted proposal is a match, a decline returns the other ticket to searching in its
// partition (proposed next with a ticket of its mode, not another's), a timeout expires the
// proposal once (one timed-out proposal, one requeued event), and the queue-wide deadlines are
// expired by one runner only, never at the same tick by each partition's.
func TestPartitionedReadyCheck(t *testing.T) {
	t.Parallel()
	store := &expiryCounter{Store: memstore.New(), calls: map[time.Time]int{}}
	c := newClock()
	m := queuesvc.NewMetrics(prometheus.NewRegistry())
	svc := queuesvc.New(queuesvc.Deps{Store: store, Matcher: pairInOrder{}, Clock: c, Metrics: m,
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())})
	q := partitionedQueue("modes")
	q.Acceptance = &queue.Acceptance{Timeout: 20 * time.Second}
	ctx := context.Background()
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatalf("a partitioned queue with a ready check: %v", err)
	}
	id := map[string]string{}
	for _, p := range [][2]string{{"a1", "a"}, {"b1", "b"}, {"a2", "a"}, {"b2", "b"}} {
		tk, _, err := svc.CreateTicket(ctx, moded(p[0], p[1]))
		if err != nil {
			t.Fatal(err)
		}
		id[p[0]] = tk.ID
	}
	runService(t, svc)
	pa, other := proposedWith(t, svc, store, id["a1"])
	if other != id["a2"] {
		t.Fatalf("a1 proposed with %s, want a2 (%s): in order, within its mode", other, id["a2"])
	}
	pb, other := proposedWith(t, svc, store, id["b1"])
	if other != id["b2"] {
		t.Fatalf("b1 proposed with %s, want b2 (%s)", other, id["b2"])
	}
	for _, p := range []string{"a1", "a2"} {
		if _, err := svc.Answer(ctx, pa.Proposal.MatchID, p, true); err != nil {
			t.Fatal(err)
		}
	}
	if tk := waitFor(t, svc, id["a1"], queue.Matched); tk.Assignment.MatchID != pa.Proposal.MatchID {
		t.Fatalf("a1's assignment %+v, want match %s", tk.Assignment, pa.Proposal.MatchID)
	}
	store.expiredAt(t, c.Now())
	if p, err := svc.Answer(ctx, pb.Proposal.MatchID, "b2", false); err != nil || p.State != queue.ProposalDeclined {
		t.Fatalf("b2 declines: %+v %v", p, err)
	}
	waitFor(t, svc, id["b1"], queue.Searching)
	// a3 comes first: an in-order matcher would pair b1 with it if b1 came back anywhere but
	// in its partition.
	a3, _, _ := svc.CreateTicket(ctx, moded("a3", "a"))
	b3, _, _ := svc.CreateTicket(ctx, moded("b3", "b"))
	advance(t, c, svc, queue.PartitionKey("modes", "b"), 50*time.Millisecond)
	pb, other = proposedWith(t, svc, store, id["b1"])
	if other != b3.ID {
		t.Fatalf("b1 proposed again with %s, want b3 (%s)", other, b3.ID)
	}
	if _, err := svc.Answer(ctx, pb.Proposal.MatchID, "b1", true); err != nil {
		t.Fatal(err)
	}
	store.expiredAt(t, c.Now())
	advance(t, c, svc, queue.PartitionKey("modes", "b"), 20*time.Second) // b3 never answers
	if tk := waitFor(t, svc, b3.ID, queue.Cancelled); tk.Reason != queue.ReasonAcceptanceTimeout {
		t.Fatalf("b3 after the deadline: %+v", tk)
	}
	waitFor(t, svc, id["b1"], queue.Searching)
	if tk, _ := svc.GetTicket(ctx, a3.ID, 0); tk.Status != queue.Searching {
		t.Fatalf("a3, alone in its mode: %s", tk.Status)
	}
	checkOnce(t, svc, store, m, id["b1"], pb.Proposal.MatchID)
}

// checkOnce checks that the timed-out proposal was resolved once: one timed-out proposal,
// one requeued event of b1 for it, and no tick time at which the deadlines were expired twice.
func checkOnce(t *testing.T, svc *queuesvc.Service, store *expiryCounter, m *queuesvc.Metrics, b1, match string) {
	t.Helper()
	if got := modesProposals(t, m, "timed_out"); got != 1 {
		t.Errorf("timed out proposals: %v, want 1", got)
	}
	if modesProposals(t, m, "declined") != 1 || modesProposals(t, m, "accepted") != 1 || modesProposals(t, m, "proposed") != 3 {
		t.Errorf("proposals: proposed %v, accepted %v, declined %v; want 3, 1, 1", modesProposals(t, m, "proposed"),
			modesProposals(t, m, "accepted"), modesProposals(t, m, "declined"))
	}
	evs, err := svc.Events(context.Background(), "modes", 0, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	requeued := 0
	for _, e := range evs {
		if e.TicketID == b1 && e.Type == queue.EventRequeued && e.MatchID == match {
			requeued++
		}
	}
	if requeued != 1 {
		t.Errorf("b1's requeued events for the timed-out proposal: %d, want 1", requeued)
	}
	if twice := store.twice(); len(twice) > 0 {
		t.Errorf("the queue's deadlines were expired more than once at a tick: %v", twice)
	}
}

// A partitioned queue with an allocator: each match, made by its partition's leader, is
// posted to the allocator once (by the queue's leader, not by every partition's), and placed.
func TestPartitionedAllocatorPlacesOnce(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var called signal
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			MatchID string `json:"match_id"`
		}
		if !verified(r, body) || json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		mu.Lock()
		calls[req.MatchID]++
		mu.Unlock()
		called.notify()
		select { // held until every partition has ticked with the matches placing
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"connection": {"address": "10.0.0.7"}}`)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	cfg := queuesvc.Config{WebhookAllow: loopback, WebhookTimeout: 10 * time.Second}
	c := newClock()
	svc := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Matcher: &uniqueIDs{}, Clock: c, Config: cfg, Outbound: posts(cfg),
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())})
	q := partitionedQueue("modes")
	q.Allocator = &queue.Allocator{URL: srv.URL, Secret: allocatorSecret, Timeout: 30 * time.Second}
	ctx := context.Background()
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatalf("a partitioned queue with an allocator: %v", err)
	}
	var ids []string
	for _, p := range [][2]string{{"a1", "a"}, {"b1", "b"}, {"a2", "a"}, {"b2", "b"}} {
		tk, _, err := svc.CreateTicket(ctx, moded(p[0], p[1]))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	runService(t, svc)
	for _, id := range ids {
		waitFor(t, svc, id, queue.Placing)
	}
	for range 3 { // ticks of every runner, each of which would post what is placing
		c.Advance(50 * time.Millisecond)
		for _, k := range []string{"modes", queue.PartitionKey("modes", "a"), queue.PartitionKey("modes", "b")} {
			ticked(t, c, svc, k)
		}
	}
	asked := func() int { mu.Lock(); defer mu.Unlock(); return len(calls) }
	if !called.await(func() bool { return asked() >= 2 }) {
		t.Fatalf("the allocator was asked for %d matches after 10 s, want 2", asked())
	}
	close(release)
	matches := map[string]bool{}
	for _, id := range ids {
		tk := waitFor(t, svc, id, queue.Matched)
		if string(tk.Assignment.Connection) != `{"address":"10.0.0.7"}` {
			t.Fatalf("assignment %+v", tk.Assignment)
		}
		matches[tk.Assignment.MatchID] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for m := range matches {
		if calls[m] != 1 {
			t.Errorf("match %s posted to the allocator %d times, want once (all: %v)", m, calls[m], calls)
		}
	}
	if len(calls) != 2 || len(matches) != 2 {
		t.Errorf("allocator calls %v for matches %v, want the two matches", calls, matches)
	}
}
