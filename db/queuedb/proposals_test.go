package queuedb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// A proposal's last answer on one replica and the leader's expiry of it on another, at its
// deadline, race: exactly one of them resolves it, and its tickets end once.
func TestQueueProposalIsResolvedOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	stores, _ := openReplicas(t, 2)
	a, b := stores[0], stores[1]
	ctx := testCtx(t)
	mustPut(t, a, queuetest.Queue("q"))
	const rounds = 12
	accepted, expired := 0, 0
	for i := range rounds {
		x := mustCreate(t, a, queuetest.Ticket("q", fmt.Sprintf("x%d", i), 1, fmt.Sprintf("x%d-1", i), fmt.Sprintf("x%d-2", i)))
		y := mustCreate(t, a, queuetest.Ticket("q", fmt.Sprintf("y%d", i), 1, fmt.Sprintf("y%d-1", i), fmt.Sprintf("y%d-2", i)))
		id := fmt.Sprintf("m%d", i)
		deadline := queuetest.T0.Add(time.Duration(i+1) * time.Minute)
		if _, err := queue.Propose(ctx, a, "q", queue.ProposeWrite{At: deadline.Add(-20 * time.Second), AcceptBy: deadline,
			Proposals: []queue.Match{queuetest.Match2v2(id, x, y)}}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{x.Players[0].ID, x.Players[1].ID, y.Players[0].ID} {
			if _, _, err := queue.AnswerProposal(ctx, b, id, p, true, deadline.Add(-time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var answered bool
		var answerErr, expireErr error
		var timedOut []queue.Proposal
		wg.Go(func() {
			_, answered, answerErr = queue.AnswerProposal(ctx, a, id, y.Players[1].ID, true, deadline)
		})
		wg.Go(func() {
			timedOut, _, expireErr = queue.ExpireProposals(ctx, b, "q", deadline)
		})
		wg.Wait()
		switch {
		case expireErr != nil:
			t.Fatalf("round %d: expiry: %v", i, expireErr)
		case answerErr == nil && answered && len(timedOut) == 0:
			accepted++
		case apperr.CodeOf(answerErr) == apperr.Conflict && len(timedOut) == 1:
			expired++
		default:
			t.Fatalf("round %d: the answer resolved %v (%v) and the expiry %d proposals", i, answered, answerErr, len(timedOut))
		}
		evs, err := eventsOf(a.Events(ctx, "q", 0, 1000, false))
		if err != nil {
			t.Fatal(err)
		}
		ends := map[string]int{}
		for _, e := range evs {
			if e.Type != queue.EventProposed {
				ends[e.TicketID]++
			}
		}
		if ends[x.ID] != 1 || ends[y.ID] != 1 {
			t.Fatalf("round %d: ends of the tickets %v", i, ends)
		}
	}
	t.Logf("of %d races, the answer won %d and the expiry %d", rounds, accepted, expired)
}

// A deposed leader's proposals and expiries are refused, as its commits are.
func TestQueueDeposedLeaderProposesNothing(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicas(t, 2)
	a, b := stores[0], stores[1]
	ctx := testCtx(t)
	mustPut(t, a, queuetest.Queue("q"))
	x := mustCreate(t, a, queuetest.Ticket("q", "x", 1, "x1", "x2"))
	y := mustCreate(t, a, queuetest.Ticket("q", "y", 2, "y1", "y2"))
	if ok, err := a.Lead(ctx, "q"); !ok || err != nil {
		t.Fatalf("a leads: %v %v", ok, err)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, a.LeaderPID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "b takes the lead", func() bool { ok, _ := b.Lead(ctx, "q"); return ok })
	w := queue.ProposeWrite{At: queuetest.T0, AcceptBy: queuetest.T0.Add(time.Minute), Proposals: []queue.Match{queuetest.Match2v2("m", x, y)}}
	if _, err := queue.Propose(ctx, a, "q", w); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the deposed leader's proposal: %v, want Conflict", err)
	}
	if done, err := queue.Propose(ctx, b, "q", w); err != nil || len(done.Matches) != 1 {
		t.Fatalf("the new leader's proposal: %+v %v", done, err)
	}
	if _, _, err := queue.ExpireProposals(ctx, a, "q", queuetest.T0.Add(time.Hour)); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the deposed leader's expiry: %v, want Conflict", err)
	}
	if tk, err := b.GetTicket(ctx, "x"); err != nil || tk.Status != queue.Proposed {
		t.Fatalf("x after the refused expiry: %+v %v", tk, err)
	}
}

// The leader dies with a proposal open (its session ended, its loop stopped): the replica
// that takes the queue over expires the proposal at its deadline, from the store.
func TestQueueANewLeaderResolvesTheOpenProposals(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicas(t, 2)
	clock := queuetest.NewClock(queuetest.T0) // the services', which tick when it moves
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	service := func(st queue.Store) *queuesvc.Service {
		return queuesvc.New(queuesvc.Deps{Store: st, Ratings: rs, Matcher: queue.TickPass{}, Clock: clock})
	}
	run := func(svc *queuesvc.Service) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- svc.Run(ctx) }()
		return func() { cancel(); <-done }
	}
	ctx := testCtx(t)
	a := service(stores[0])
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	q.Acceptance = &queue.Acceptance{Timeout: 20 * time.Second}
	if _, _, err := a.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	r := 1000.0
	alice, _, err := a.CreateTicket(ctx, queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: "alice", Rating: &r}}})
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := a.CreateTicket(ctx, queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: "bob", Rating: &r}}})
	if err != nil {
		t.Fatal(err)
	}
	stopA := run(a)
	var proposal string
	waitFor(t, 10*time.Second, "alice is proposed", func() bool {
		tk, err := a.GetTicket(ctx, alice.ID, time.Second)
		if err == nil && tk.Proposal != nil {
			proposal = tk.Proposal.MatchID
		}
		return err == nil && tk.Status == queue.Proposed
	})
	if _, err := a.Answer(ctx, proposal, "alice", true); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, stores[0].LeaderPID()); err != nil {
		t.Fatal(err)
	}
	stopA()
	clock.Advance(21 * time.Second) // past the proposal's deadline: the new leader's first tick expires it
	b := service(stores[1])
	stopB := run(b)
	defer stopB()
	waitFor(t, 10*time.Second, "bob's ticket is cancelled by the new leader", func() bool {
		tk, err := b.GetTicket(ctx, bob.ID, time.Second)
		return err == nil && tk.Status == queue.Cancelled && tk.Reason == queue.ReasonAcceptanceTimeout
	})
	if tk, err := b.GetTicket(ctx, alice.ID, 0); err != nil || tk.Status != queue.Searching || !tk.CreatedAt.Equal(alice.CreatedAt) {
		t.Fatalf("alice after the new leader's expiry: %+v %v", tk, err)
	}
}

// Answers, cancels and expiries of the same proposals race on two replicas: each proposal
// resolves once, and each of its tickets ends it with exactly one event (matched, cancelled
// or requeued) and a status that agrees with it.
func TestQueueProposalRacesResolveOnce(t *testing.T) {
	t.Parallel()
	stores, _ := openReplicas(t, 2)
	ctx := testCtx(t)
	mustPut(t, stores[0], queuetest.Queue("q"))
	const n = 16
	deadline := queuetest.T0.Add(time.Minute)
	var tickets []queue.Ticket
	for i := range n {
		x := mustCreate(t, stores[0], queuetest.Ticket("q", fmt.Sprintf("x%d", i), 1, fmt.Sprintf("x%d", i)))
		y := mustCreate(t, stores[0], queuetest.Ticket("q", fmt.Sprintf("y%d", i), 1, fmt.Sprintf("y%d", i)))
		if _, err := queue.Propose(ctx, stores[0], "q", queue.ProposeWrite{At: queuetest.T0, AcceptBy: deadline,
			Proposals: []queue.Match{queuetest.Match2v2(fmt.Sprintf("m%d", i), x, y)}}); err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, x, y)
	}
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		x, y := fmt.Sprintf("x%d", i), fmt.Sprintf("y%d", i)
		a, b := stores[i%2], stores[(i+1)%2]
		wg.Go(func() { _, _, _ = queue.AnswerProposal(ctx, a, id, x, true, deadline.Add(-time.Second)) })
		wg.Go(func() { _, _, _ = queue.AnswerProposal(ctx, b, id, y, i%3 != 0, deadline.Add(-time.Second)) })
		if i%4 == 1 {
			wg.Go(func() { _, _ = queue.CancelTicket(ctx, a, y, deadline.Add(-time.Second)) })
		}
	}
	wg.Go(func() {
		if _, _, err := queue.ExpireProposals(ctx, stores[1], "q", deadline); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	if _, _, err := queue.ExpireProposals(ctx, stores[0], "q", deadline); err != nil { // whatever is left open
		t.Fatal(err)
	}
	evs, err := eventsOf(stores[0].Events(ctx, "q", 0, 10_000, false))
	if err != nil {
		t.Fatal(err)
	}
	// The first event after its proposal ends it. A cancel may follow a requeue: the
	// expiry ran first, whatever the cancel's own timestamp, and the cancel found a
	// searching ticket.
	ends := map[string][]queue.Event{}
	for _, e := range evs {
		if e.Type != queue.EventProposed {
			ends[e.TicketID] = append(ends[e.TicketID], e)
		}
	}
	for _, tk := range tickets {
		got, err := stores[0].GetTicket(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		es := ends[tk.ID]
		cancelledLater := len(es) == 2 && es[0].Type == queue.EventRequeued && es[1].Type == queue.EventCancelled
		if len(es) != 1 && !cancelledLater {
			t.Fatalf("ticket %s ended its proposal %d times: %+v", tk.ID, len(es), es)
		}
		want := map[queue.EventType]queue.Status{queue.EventMatched: queue.Matched, queue.EventCancelled: queue.Cancelled,
			queue.EventRequeued: queue.Searching}[es[0].Type]
		if cancelledLater {
			want = queue.Cancelled
		}
		if got.Status != want {
			t.Fatalf("ticket %s is %s after a %s event", tk.ID, got.Status, es[0].Type)
		}
	}
	for i := range n {
		p, err := stores[1].GetProposal(ctx, fmt.Sprintf("m%d", i))
		if err != nil || p.State == queue.ProposalOpen {
			t.Fatalf("proposal m%d: %+v %v", i, p.State, err)
		}
		x, _ := stores[1].GetTicket(ctx, fmt.Sprintf("x%d", i))
		if (p.State == queue.ProposalAccepted) != (x.Status == queue.Matched) {
			t.Fatalf("proposal m%d is %s and its ticket x%d %s", i, p.State, i, x.Status)
		}
	}
}
