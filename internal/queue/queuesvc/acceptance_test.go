package queuesvc_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// readyFixture is a 1v1 queue with a 20 s ready check, its service's metrics on reg.
func readyFixture(t *testing.T) (fixture, *queuesvc.Metrics) {
	t.Helper()
	store := memstore.New()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	c := newClock()
	m := queuesvc.NewMetrics(prometheus.NewRegistry())
	svc := queuesvc.New(queuesvc.Deps{Store: store, Ratings: rs, Matcher: pairInOrder{}, Clock: c, Metrics: m})
	f := fixture{svc: svc, store: store, ratings: rs, clock: c}
	f.queue(t, func(q *queue.Queue) { q.Acceptance = &queue.Acceptance{Timeout: 20 * time.Second} })
	return f, m
}

// waitFor long-polls ticket id until its status is want.
func waitFor(t *testing.T, svc *queuesvc.Service, id string, want queue.Status) queue.Ticket {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk, err := svc.GetTicket(context.Background(), id, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status == want {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticket %s is %s (%s), want %s", id, tk.Status, tk.Reason, want)
		}
	}
}

func proposals(m *queuesvc.Metrics, outcome string) float64 {
	var out dto.Metric
	if err := queuesvc.ProposalsCounter(m).WithLabelValues("duel", outcome).Write(&out); err != nil {
		panic(err)
	}
	return out.GetCounter().GetValue()
}

// A ready check that times out cancels the silent player's ticket and puts the one that
// accepted back to searching with its wait; it is proposed again with the next player, and
// matched when both accept.
func TestReadyCheckTimesOutThenMatches(t *testing.T) {
	t.Parallel()
	f, m := readyFixture(t)
	ctx := context.Background()
	a, _, _ := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	b, _, _ := f.svc.CreateTicket(ctx, solo("duel", "bob"))
	runService(t, f.svc)
	pa := waitFor(t, f.svc, a.ID, queue.Proposed)
	if pa.Proposal == nil || !pa.Proposal.AcceptBy.Equal(f.clock.Now().Add(20*time.Second)) {
		t.Fatalf("alice's proposal: %+v", pa.Proposal)
	}
	first := pa.Proposal.MatchID
	if p, err := f.svc.Answer(ctx, first, "alice", true); err != nil || p.State != queue.ProposalOpen {
		t.Fatalf("alice accepts: %+v %v", p, err)
	}
	f.advance(t, 19*time.Second) // not yet
	if tk, _ := f.svc.GetTicket(ctx, b.ID, 0); tk.Status != queue.Proposed {
		t.Fatalf("bob before the deadline: %s", tk.Status)
	}
	f.advance(t, time.Second)
	if tk := waitFor(t, f.svc, b.ID, queue.Cancelled); tk.Reason != queue.ReasonAcceptanceTimeout {
		t.Fatalf("bob after the deadline: %+v", tk)
	}
	ga := waitFor(t, f.svc, a.ID, queue.Searching)
	if !ga.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("alice lost her wait: created %v, was %v", ga.CreatedAt, a.CreatedAt)
	}
	if got := proposals(m, "timed_out"); got != 1 {
		t.Fatalf("timed out proposals: %v", got)
	}

	c, _, _ := f.svc.CreateTicket(ctx, solo("duel", "carol"))
	f.advance(t, 50*time.Millisecond) // alice is back at this tick's load, with carol
	pa = waitFor(t, f.svc, a.ID, queue.Proposed)
	if pa.Proposal.MatchID == first || pa.Proposal.Team != 0 { // alice is the older: team 0
		t.Fatalf("alice's second proposal: %+v", pa.Proposal)
	}
	for _, p := range []string{"carol", "alice"} {
		if _, err := f.svc.Answer(ctx, pa.Proposal.MatchID, p, true); err != nil {
			t.Fatal(err)
		}
	}
	ga = waitFor(t, f.svc, a.ID, queue.Matched)
	if ga.Assignment == nil || ga.Assignment.MatchID != pa.Proposal.MatchID {
		t.Fatalf("alice's assignment: %+v", ga.Assignment)
	}
	if mt, err := f.svc.GetMatch(ctx, pa.Proposal.MatchID); err != nil || mt.Teams[1].Players[0].TicketID != c.ID {
		t.Fatalf("the match: %+v %v", mt, err)
	}
	if proposals(m, "proposed") != 2 || proposals(m, "accepted") != 1 {
		t.Fatalf("proposals: proposed %v, accepted %v", proposals(m, "proposed"), proposals(m, "accepted"))
	}
	// The leader's stats count the match the ready check made, and both players' waits: its
	// next tick loads the matched tickets, the one after rebuilds the stats (at most every
	// StatsRefresh).
	f.advance(t, 50*time.Millisecond)
	f.advance(t, queue.StatsRefresh)
	st, err := f.svc.Stats(ctx, "duel")
	if err != nil || st.MatchesLastMinute != 1 || st.Wait.Samples != 2 {
		t.Fatalf("stats: %d matches, %d waits (%v); want 1 and 2", st.MatchesLastMinute, st.Wait.Samples, err)
	}
	// Every change is an event, for SSE, long-polls and webhooks alike.
	evs, err := f.svc.Events(ctx, "duel", 0, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []queue.EventType
	for _, e := range evs {
		if e.TicketID == a.ID {
			types = append(types, e.Type)
		}
	}
	want := []queue.EventType{queue.EventProposed, queue.EventRequeued, queue.EventProposed, queue.EventMatched}
	if len(types) != len(want) {
		t.Fatalf("alice's events: %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("alice's events: %v, want %v", types, want)
		}
	}
}

// A decline requeues the other player at once, and he is proposed again at a later tick; a
// proposed ticket cancelled by its owner dissolves its proposal the same way.
func TestDeclineAndCancelDissolveTheProposal(t *testing.T) {
	t.Parallel()
	f, m := readyFixture(t)
	ctx := context.Background()
	a, _, _ := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	b, _, _ := f.svc.CreateTicket(ctx, solo("duel", "bob"))
	runService(t, f.svc)
	pa := waitFor(t, f.svc, a.ID, queue.Proposed)
	if p, err := f.svc.Answer(ctx, pa.Proposal.MatchID, "bob", false); err != nil || p.State != queue.ProposalDeclined {
		t.Fatalf("bob declines: %+v %v", p, err)
	}
	if tk, _ := f.svc.GetTicket(ctx, b.ID, 0); tk.Status != queue.Cancelled || tk.Reason != queue.ReasonDeclined {
		t.Fatalf("bob: %+v", tk)
	}
	waitFor(t, f.svc, a.ID, queue.Searching)
	f.svc.CreateTicket(ctx, solo("duel", "carol"))
	f.advance(t, 50*time.Millisecond)
	pa = waitFor(t, f.svc, a.ID, queue.Proposed)
	if _, err := f.svc.CancelTicket(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := queue.AnswerProposal(ctx, f.store, pa.Proposal.MatchID, "carol", true, f.clock.Now()); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the dissolved proposal takes an answer: %v", err)
	}
	if got := proposals(m, "declined"); got != 2 {
		t.Fatalf("declined proposals: %v", got)
	}
	// An answer for a player not in the proposal is a 404, as an unknown proposal.
	_, err := f.svc.Answer(ctx, pa.Proposal.MatchID, "mallory", true)
	if apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a stranger's answer: %v", err)
	}
}

// The proposals are in the store: a replica that takes over a queue expires those its
// predecessor left open.
func TestANewLeaderExpiresTheOpenProposals(t *testing.T) {
	t.Parallel()
	f, _ := readyFixture(t)
	ctx := context.Background()
	a, _, _ := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	f.svc.CreateTicket(ctx, solo("duel", "bob"))
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.svc.Run(runCtx) }()
	waitFor(t, f.svc, a.ID, queue.Proposed)
	stop() // the leader goes away with the proposal open
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	next := queuesvc.New(queuesvc.Deps{Store: f.store, Ratings: f.ratings, Matcher: pairInOrder{}, Clock: f.clock})
	runService(t, next)
	if tk := waitFor(t, next, a.ID, queue.Cancelled); tk.Reason != queue.ReasonAcceptanceTimeout {
		t.Fatalf("alice after the new leader's tick: %+v", tk)
	}
}
