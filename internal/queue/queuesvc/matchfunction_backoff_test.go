package queuesvc_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

// A new leader takes on the backoff of a dead function: the first leader's failed call is
// published with the stats, and the leader after it (another service on the same store and
// clock) makes no call until that backoff step is over: one call per step, not one per
// leader change. It failed before the backoff was published (the new leader called at its
// first tick: 2 calls within the first step).
func TestMatchFunctionBackoffOutlivesTheLeader(t *testing.T) {
	t.Parallel()
	f := newFunctionFixture(t, replace(queue.FailureWait), func(w http.ResponseWriter, _ *http.Request, _ poolRequest) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	ids := f.tickets(t, "alice", "bob")
	ctx, stop := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { first <- f.svc.Run(ctx) }()
	ticked(t, f.clock, f.svc, "duel")
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("%d calls at the first leader's first tick, want 1", n)
	}
	stop()
	if err := <-first; err != nil {
		t.Fatal(err)
	}

	cfg := queuesvc.Config{WebhookAllow: loopback}
	f.svc = queuesvc.New(queuesvc.Deps{Store: f.store, Ratings: f.ratings, Matcher: pairInOrder{}, Config: cfg, Clock: f.clock,
		Outbound: posts(cfg)})
	runService(t, f.svc)
	f.advance(t, 50*time.Millisecond)
	// Ticks every 50 ms: the first step is 2 s from the failed call.
	for range 37 {
		f.advance(t, 50*time.Millisecond)
	}
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("%d calls within the first backoff step across a leader change, want 1", n)
	}
	tk := f.ticket(t, ids[0])
	if tk.WaitingOn == nil || tk.WaitingOn.Rule != queue.WaitMatchFunction ||
		!strings.HasPrefix(tk.WaitingOn.Detail, "answered 503 Service Unavailable: down (1 failures in a row") {
		t.Fatalf("the new leader's tickets wait on %+v", tk.WaitingOn)
	}
	f.advance(t, 50*time.Millisecond)
	f.advance(t, 50*time.Millisecond)
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("%d calls once the step is over, want 2", n)
	}
}
