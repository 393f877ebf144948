package queuesvc_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

// A ticket the queue no longer admits (a party of two once team_size shrinks to one) leaves
// as the built-in pass lets it leave, expired with reason invalid, and is not sent to the
// match function; the others are.
func TestMatchFunctionInvalidTicketsExpire(t *testing.T) {
	t.Parallel()
	var sent poolsSent
	f := newFunctionFixture(t, replace(queue.FailureWait), sent.answerNone, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize = 2, 2 })
	ctx := context.Background()
	party, _, err := f.svc.CreateTicket(ctx, queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: "p1"}, {ID: "p2"}}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := f.svc.GetQueue(ctx, "duel")
	if err != nil {
		t.Fatal(err)
	}
	q.TeamSize, q.MaxPartySize = 1, 1
	if _, _, err := f.svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	ids := f.tickets(t, "alice")
	runService(t, f.svc)
	if got := waitForStatus(t, f.svc, party.ID); got.Status != queue.Expired || got.Reason != queue.ReasonInvalid {
		t.Fatalf("the party: %s (%q), want expired (invalid)", got.Status, got.Reason)
	}
	ticked(t, f.clock, f.svc, "duel")
	sent.check(t, "alice's", ids[0], "the party's", party.ID)
}

// poolsSent are the ticket ids of each pool a match function was sent.
type poolsSent struct {
	mu    sync.Mutex
	pools [][]string
}

// answerNone is a match function that keeps the pool it is sent and makes no match.
func (s *poolsSent) answerNone(w http.ResponseWriter, _ *http.Request, req poolRequest) {
	ids := make([]string, len(req.Pool))
	for i, p := range req.Pool {
		ids[i] = p.ID
	}
	s.mu.Lock()
	s.pools = append(s.pools, ids)
	s.mu.Unlock()
	answer(w, `{"matches":[]}`)
}

// check fails t unless the function was sent a pool, and each held the ticket in and not the
// ticket out (inName and outName say which they are).
func (s *poolsSent) check(t *testing.T, inName, in, outName, out string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pools) == 0 {
		t.Fatal("the function was never called")
	}
	for _, pool := range s.pools {
		if slices.Contains(pool, out) || !slices.Contains(pool, in) {
			t.Fatalf("a pool of %v: want %s %s and not %s %s", pool, inName, in, outName, out)
		}
	}
}

// A backfill of a queue whose match function makes the matches is filled by the built-in
// pass, from the tickets the function left out: one joiner, sent to the function and not
// matched by it, fills one of two backfills (each with one open slot), through the same
// commit as the built-in pass's fills. The other keeps searching and does not say it waits
// on the match function, which was never sent it.
func TestMatchFunctionLeavesTheBackfillsToThePass(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sent []string
	f := newFunctionFixtureWith(t, queue.TickPass{}, replace(queue.FailureWait), func(w http.ResponseWriter, _ *http.Request, req poolRequest) {
		mu.Lock()
		for _, p := range req.Pool {
			sent = append(sent, p.ID)
		}
		mu.Unlock()
		answer(w, `{"matches":[]}`)
	}, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize, q.Regions = 2, 2, []string{"eu", "us"} })
	ctx := context.Background()
	backfill := func(match, prefix string) queue.Ticket {
		tk, _, err := f.svc.CreateBackfill(ctx, queue.NewBackfill{Queue: "duel", MatchID: match, OpenSlots: []int{1, 0}, Region: "eu",
			Teams: []queue.NewBackfillTeam{{Players: []queue.NewPlayer{{ID: prefix + "r1", Rating: rating(1000)}}, Bots: []float64{950}},
				{Players: []queue.NewPlayer{{ID: prefix + "b1", Rating: rating(1010)}, {ID: prefix + "b2", Rating: rating(990)}}}},
			Bots: &queue.BotRule{MeanRating: 950, TargetPlayers: 4, RecommendedMin: 2, RecommendedMax: 4}})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	bfs := []queue.Ticket{backfill("running-1", "a"), backfill("running-2", "b")}
	joiner, _, err := f.svc.CreateTicket(ctx, queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: "j1", Rating: rating(1005)}},
		Latencies: map[string]float64{"eu": 20}})
	if err != nil {
		t.Fatal(err)
	}
	runService(t, f.svc)
	got := waitFor(t, f.svc, joiner.ID, queue.Matched)
	a := got.Assignment
	if a == nil || (a.MatchID != "running-1" && a.MatchID != "running-2") || a.Team != 0 || a.FillID == "" {
		t.Fatalf("the joiner: %+v", a)
	}
	filled, other := bfs[0], bfs[1]
	if a.MatchID == "running-2" {
		filled, other = other, filled
	}
	if got := f.ticket(t, filled.ID); got.Status != queue.Matched || got.Assignment == nil || got.Assignment.FillID != a.FillID {
		t.Fatalf("the filled backfill: %+v %+v", got, got.Assignment)
	}
	ticked(t, f.clock, f.svc, "duel")
	if got := f.ticket(t, other.ID); got.Status != queue.Searching || (got.WaitingOn != nil && got.WaitingOn.Rule == queue.WaitMatchFunction) {
		t.Fatalf("the other backfill: %s, waiting on %+v", got.Status, got.WaitingOn)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(sent, bfs[0].ID) || slices.Contains(sent, bfs[1].ID) || !slices.Contains(sent, joiner.ID) {
		t.Fatalf("sent %v: want the joiner %s and no backfill", sent, joiner.ID)
	}
}

// The function's matches come first: the tickets it matched do not join a backfill at the
// same tick, and the backfill takes one it left out. In a 1v1 queue whose backfill has one
// open slot, the function matches the two oldest tickets (whom the pass alone would have put
// in the backfill first); the third fills it.
func TestMatchFunctionMatchesComeBeforeTheFills(t *testing.T) {
	t.Parallel()
	f := newFunctionFixtureWith(t, queue.TickPass{}, replace(queue.FailureWait), func(w http.ResponseWriter, _ *http.Request, req poolRequest) {
		if len(req.Pool) != 3 {
			answer(w, `{"matches":[]}`)
			return
		}
		answer(w, `{"matches":[{"teams":[{"tickets":["`+req.Pool[0].ID+`"]},{"tickets":["`+req.Pool[1].ID+`"]}]}]}`)
	}, func(q *queue.Queue) { q.Regions = []string{"eu"} })
	ctx := context.Background()
	bf, _, err := f.svc.CreateBackfill(ctx, queue.NewBackfill{Queue: "duel", MatchID: "running-1", OpenSlots: []int{0, 1}, Region: "eu",
		Teams: []queue.NewBackfillTeam{{Players: []queue.NewPlayer{{ID: "r1", Rating: rating(1000)}}}, {}}})
	if err != nil {
		t.Fatal(err)
	}
	ids := f.tickets(t, "alice", "bob", "carol")
	runService(t, f.svc)
	a := waitFor(t, f.svc, ids[0], queue.Matched)
	if b := waitFor(t, f.svc, ids[1], queue.Matched); a.Assignment.MatchID != b.Assignment.MatchID || a.Assignment.MatchID == "running-1" {
		t.Fatalf("alice and bob: %+v %+v, want the function's match", a.Assignment, b.Assignment)
	}
	c := waitFor(t, f.svc, ids[2], queue.Matched)
	if c.Assignment.MatchID != "running-1" || c.Assignment.Team != 1 {
		t.Fatalf("carol: %+v, want the backfill's open slot", c.Assignment)
	}
	if got := f.ticket(t, bf.ID); got.Status != queue.Matched || got.Assignment.FillID != c.Assignment.FillID {
		t.Fatalf("the backfill: %+v", got)
	}
}

// A ticket every region of whose is beyond the widest latency step leaves as the built-in
// pass lets it leave, expired with reason no_region, and is not sent to the match function;
// a ticket within a region is.
func TestMatchFunctionNoRegionTicketsExpire(t *testing.T) {
	t.Parallel()
	var sent poolsSent
	f := newFunctionFixture(t, replace(queue.FailureWait), sent.answerNone, func(q *queue.Queue) {
		q.Regions = []string{"eu", "us"}
		q.Expansions.MaxLatencyMS = []queue.Step{{AfterS: 0, Value: 50}, {AfterS: 20, Value: 120}}
	})
	ctx := context.Background()
	ticket := func(id string, lat map[string]float64) queue.Ticket {
		tk, _, err := f.svc.CreateTicket(ctx, queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: id}}, Latencies: lat})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	far := ticket("far", map[string]float64{"eu": 300, "us": 121})
	near := ticket("near", map[string]float64{"eu": 300, "us": 119})
	runService(t, f.svc)
	if got := waitForStatus(t, f.svc, far.ID); got.Status != queue.Expired || got.Reason != matchpool.ReasonNoRegion {
		t.Fatalf("the far ticket: %s (%q), want expired (%s)", got.Status, got.Reason, matchpool.ReasonNoRegion)
	}
	ticked(t, f.clock, f.svc, "duel")
	if got := f.ticket(t, near.ID); got.Status != queue.Searching {
		t.Fatalf("the near ticket: %s (%q), want searching", got.Status, got.Reason)
	}
	sent.check(t, "the near", near.ID, "the far", far.ID)
}

// A function that answers an error is quoted in the waiting tickets' waiting_on: its
// problem's detail (the message, not only the status), on one line and bounded, then the
// backoff's count once the next tick finds it backing off.
func TestMatchFunctionErrorDetailIsShown(t *testing.T) {
	t.Parallel()
	f := newFunctionFixture(t, replace(queue.FailureWait), func(w http.ResponseWriter, _ *http.Request, _ poolRequest) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"title":"Internal Server Error","status":500,"detail":"the match function failed:\n  no model loaded `+
			strings.Repeat("x", 400)+`"}`)
	})
	ids := f.tickets(t, "alice", "bob")
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	want := "answered 500 Internal Server Error: the match function failed: no model loaded xxx"
	for _, id := range ids {
		tk := f.ticket(t, id)
		if tk.Status != queue.Searching || tk.WaitingOn == nil || tk.WaitingOn.Rule != queue.WaitMatchFunction ||
			!strings.HasPrefix(tk.WaitingOn.Detail, want) {
			t.Fatalf("%s: %+v, want the detail to start %q", tk.Status, tk.WaitingOn, want)
		}
		if d := tk.WaitingOn.Detail; !strings.HasSuffix(d, "…") || utf8.RuneCountInString(d) > 300 {
			t.Fatalf("the detail is not bounded: %d characters", utf8.RuneCountInString(d))
		}
	}
	f.advance(t, 50*time.Millisecond) // within the backoff: no call, the same words and the count
	if d := f.ticket(t, ids[0]).WaitingOn.Detail; !strings.HasPrefix(d, want) || !strings.Contains(d, "1 failures in a row") {
		t.Fatalf("while backing off: %q", d)
	}
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("%d calls, want 1", n)
	}
}

// A shadow function that takes its time holds up no tick: the built-in pass's match commits
// at the tick that calls it, and the ticks after it run on time, skipping their calls while
// it runs (counted, outcome skipped); its outcome is measured by the tick after it ends.
func TestShadowCallRunsBesideTheTicks(t *testing.T) {
	t.Parallel()
	mf := replace(queue.FailureWait)
	mf.Mode, mf.Timeout = queue.FunctionShadow, 10*time.Second
	entered, release := make(chan struct{}, 1), make(chan struct{})
	f := newFunctionFixture(t, mf, func(w http.ResponseWriter, r *http.Request, req poolRequest) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		answer(w, `{"matches":[{"teams":[{"tickets":["`+req.Pool[0].ID+`"]},{"tickets":["`+req.Pool[1].ID+`"]}]}]}`)
	})
	ids := f.tickets(t, "alice", "bob")
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel") // the tick ends while its call is held
	if a := waitFor(t, f.svc, ids[0], queue.Matched); !strings.HasPrefix(a.Assignment.MatchID, "m-") {
		t.Fatalf("in shadow, matched by %s, not the rules", a.Assignment.MatchID)
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the shadow function was not called within 10 s")
	}
	f.advance(t, 50*time.Millisecond)
	f.advance(t, 50*time.Millisecond)
	calls := queuesvc.FunctionCalls(f.metrics)
	if skipped := counted(calls.WithLabelValues("skipped")); skipped != 2 || f.calls.Load() != 1 {
		t.Fatalf("while the call runs: %v ticks skipped their call, %d calls; want 2 and 1", skipped, f.calls.Load())
	}
	close(release)
	shadowDone(t, f)
	f.advance(t, queue.StatsRefresh) // takes the outcome
	st, err := f.svc.Stats(context.Background(), "duel")
	if err != nil || st.Shadow == nil || st.Shadow.FunctionCalls != 1 || st.Shadow.Function.Matches != 1 || st.Shadow.Rules.Matches != 1 {
		t.Fatalf("shadow stats after the call ended: %+v %v", st.Shadow, err)
	}
	if ok := counted(calls.WithLabelValues("ok")); ok != 1 {
		t.Fatalf("%v calls ok, want 1", ok)
	}
}
