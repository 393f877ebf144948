package queuesvc_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

const functionSecret = "a-match-function-secret"

// poolRequest is what a test's function reads of a call: the pool's ticket ids, oldest first.
type poolRequest struct {
	Tick uint64 `json:"tick"`
	Pool []struct {
		ID string `json:"id"`
	} `json:"pool"`
}

// functionFixture is a 1v1 queue (tick 50 ms) whose match function is answer, served over
// loopback HTTP and reached through the service's outbound HTTP; each call's signature is
// checked as a receiver would. The fixture counts the calls and registers the metrics.
type functionFixture struct {
	fixture
	calls   *atomic.Int32
	metrics *queuesvc.Metrics
}

func newFunctionFixture(t *testing.T, mf queue.MatchFunction, answer func(w http.ResponseWriter, r *http.Request, req poolRequest), also ...func(*queue.Queue)) functionFixture {
	t.Helper()
	return newFunctionFixtureWith(t, pairInOrder{}, mf, answer, also...)
}

// newFunctionFixtureWith is newFunctionFixture whose built-in pass is matcher.
func newFunctionFixtureWith(t *testing.T, matcher queue.Matcher, mf queue.MatchFunction, answer func(w http.ResponseWriter, r *http.Request, req poolRequest), also ...func(*queue.Queue)) functionFixture {
	t.Helper()
	calls := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls.Add(1)
		if err := client.VerifyWebhook(functionSecret, r.Header, body, queuetest.T0, time.Hour); err != nil {
			t.Errorf("the call's signature: %v", err)
		}
		var req poolRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("the call's body: %v", err)
		}
		answer(w, r, req)
	}))
	stop := make(chan struct{})
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // before the server's Close, which waits for its handlers
	cfg := queuesvc.Config{WebhookAllow: loopback}
	f := newFixture(t, cfg)
	m := queuesvc.NewMetrics(prometheus.NewRegistry())
	f.svc = queuesvc.New(queuesvc.Deps{Store: f.store, Ratings: f.ratings, Matcher: matcher, Config: cfg, Clock: f.clock,
		Outbound: posts(cfg), Metrics: m})
	mf.URL, mf.Secret = srv.URL, functionSecret
	f.queue(t, func(q *queue.Queue) {
		q.MatchFunction = &mf
		for _, change := range also {
			change(q)
		}
	})
	return functionFixture{fixture: f, calls: calls, metrics: m}
}

func replace(onFailure queue.FunctionFailure) queue.MatchFunction {
	return queue.MatchFunction{Timeout: 200 * time.Millisecond, Mode: queue.FunctionReplace, OnFailure: onFailure, MaxPool: 100}
}

func answer(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, body)
}

// tickets creates solo tickets for ids, in order (the first the oldest), and returns their ids.
func (f functionFixture) tickets(t *testing.T, ids ...string) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		tk, _, err := f.svc.CreateTicket(context.Background(), solo("duel", id))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = tk.ID
		f.clock.Advance(time.Millisecond)
	}
	return out
}

func (f functionFixture) ticket(t *testing.T, id string) queue.Ticket {
	t.Helper()
	tk, err := f.svc.GetTicket(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// In mode replace the function's matches are made, as it proposed them (its teams, the
// service's pairs and differences), and the tickets it left out wait, saying so; a proposal
// that fails the check is dropped, counted by reason, and takes no ticket with it.
func TestMatchFunctionMakesTheMatches(t *testing.T) {
	t.Parallel()
	f := newFunctionFixture(t, replace(queue.FailureWait), func(w http.ResponseWriter, _ *http.Request, req poolRequest) {
		if len(req.Pool) != 4 {
			answer(w, `{"matches":[]}`)
			return
		}
		p := func(i int) string { return `"` + req.Pool[i].ID + `"` }
		// The newest against the oldest; then one of a ticket not in the pool, then one
		// that names a ticket the first took: both rejected.
		answer(w, `{"matches":[{"teams":[{"tickets":[`+p(3)+`]},{"tickets":[`+p(0)+`]}]},`+
			`{"teams":[{"tickets":[`+p(1)+`]},{"tickets":["tk-nobody"]}]},`+
			`{"teams":[{"tickets":[`+p(2)+`]},{"tickets":[`+p(0)+`]}]}]}`)
	})
	ids := f.tickets(t, "alice", "bob", "carol", "dave")
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	a := waitFor(t, f.svc, ids[0], queue.Matched)
	m, err := f.svc.GetMatch(context.Background(), a.Assignment.MatchID)
	if err != nil || m.Teams[0].Players[0].ID != "dave" || m.Teams[1].Players[0].ID != "alice" || len(m.Pairs) != 1 {
		t.Fatalf("the match as proposed: %+v %v", m, err)
	}
	for _, id := range ids[1:3] {
		tk := f.ticket(t, id)
		if tk.Status != queue.Searching || tk.WaitingOn == nil || tk.WaitingOn.Rule != queue.WaitMatchFunction ||
			!strings.Contains(tk.WaitingOn.Detail, "not in the match function's matches") {
			t.Fatalf("a ticket left out: %+v %+v", tk.Status, tk.WaitingOn)
		}
	}
	rejected := queuesvc.FunctionRejected(f.metrics)
	if got := counted(rejected.WithLabelValues("duel", "unknown_ticket")); got != 1 {
		t.Errorf("unknown_ticket rejections: %v", got)
	}
	if got := counted(rejected.WithLabelValues("duel", "duplicate")); got != 1 {
		t.Errorf("duplicate rejections: %v", got)
	}
}

// A function that sleeps past timeout_ms, with on_failure wait: the tickets keep searching,
// their waiting_on says why; the next calls back off (a dead function is called once per
// backoff step, not at each tick).
func TestMatchFunctionTimeoutWaitsAndBacksOff(t *testing.T) {
	t.Parallel()
	f := newFunctionFixture(t, replace(queue.FailureWait), func(w http.ResponseWriter, r *http.Request, _ poolRequest) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	ids := f.tickets(t, "alice", "bob")
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	tk := f.ticket(t, ids[0])
	if tk.Status != queue.Searching || tk.WaitingOn == nil || tk.WaitingOn.Rule != "match_function" || tk.WaitingOn.Detail != "timed out after 200 ms" {
		t.Fatalf("after a call timed out: %s %+v", tk.Status, tk.WaitingOn)
	}
	// Ticks every 50 ms: the backoff after one failure is 2 s, then 4 s.
	for range 39 {
		f.advance(t, 50*time.Millisecond)
	}
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("%d calls within the first backoff, want 1", n)
	}
	tk = f.ticket(t, ids[1])
	if tk.WaitingOn == nil || !strings.Contains(tk.WaitingOn.Detail, "timed out after 200 ms (1 failures in a row; the next call in") {
		t.Fatalf("while backing off: %+v", tk.WaitingOn)
	}
	f.advance(t, 50*time.Millisecond)
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("%d calls at the end of the first backoff, want 2", n)
	}
	for range 79 {
		f.advance(t, 50*time.Millisecond)
	}
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("%d calls within the second backoff (4 s), want 2", n)
	}
	if tk := f.ticket(t, ids[0]); tk.Status != queue.Searching {
		t.Fatalf("a ticket of a dead function's queue: %s", tk.Status)
	}
}

// With on_failure rules, a failed call leaves the tick to the built-in pass.
func TestMatchFunctionFailureFallsBackToTheRules(t *testing.T) {
	t.Parallel()
	f := newFunctionFixture(t, replace(queue.FailureRules), func(w http.ResponseWriter, _ *http.Request, _ poolRequest) {
		http.Error(w, "down", http.StatusInternalServerError)
	})
	ids := f.tickets(t, "alice", "bob")
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	a := waitFor(t, f.svc, ids[0], queue.Matched)
	if !strings.HasPrefix(a.Assignment.MatchID, "m-") { // pairInOrder's
		t.Fatalf("matched by %s, not the rules", a.Assignment.MatchID)
	}
	if f.calls.Load() != 1 {
		t.Fatalf("%d calls", f.calls.Load())
	}
}

// Answers that cannot be read (not JSON, not the protocol's, too large) fail the call, and
// the reason is the tickets' waiting_on; answers of the wrong shape are rejected by reason.
// Either way nothing is committed and no ticket leaves searching.
func TestMatchFunctionBadAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, detail, reason string
	}{
		{"not JSON", `<html>`, "cannot be read", ""},
		{"not the protocol's", `{"matches":[],"extra":1}`, "cannot be read", ""},
		{"too large", `{"matches":[` + strings.Repeat(" ", queue.MaxFunctionAnswer) + `]}`, "over", ""},
		{"unknown tickets", `{"matches":[{"teams":[{"tickets":["tk-x"]},{"tickets":["tk-y"]}]}]}`, "not in the match function's matches", "unknown_ticket"},
		{"three teams", `{"matches":[{"teams":[{"tickets":[A]},{"tickets":[B]},{"tickets":[]}]}]}`, "not in the match function's matches", "teams"},
		{"a team of two", `{"matches":[{"teams":[{"tickets":[A,B]},{"tickets":[]}]}]}`, "not in the match function's matches", "team_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mf := replace(queue.FailureWait)
			mf.Timeout = 10 * time.Second // 16 MiB under -race
			f := newFunctionFixture(t, mf, func(w http.ResponseWriter, _ *http.Request, req poolRequest) {
				body := tc.body
				if len(req.Pool) == 2 {
					body = strings.NewReplacer("A", `"`+req.Pool[0].ID+`"`, "B", `"`+req.Pool[1].ID+`"`).Replace(body)
				}
				answer(w, body)
			})
			ids := f.tickets(t, "alice", "bob")
			runService(t, f.svc)
			ticked(t, f.clock, f.svc, "duel")
			for _, id := range ids {
				tk := f.ticket(t, id)
				if tk.Status != queue.Searching || tk.WaitingOn == nil || !strings.Contains(tk.WaitingOn.Detail, tc.detail) {
					t.Fatalf("%s: %+v", tk.Status, tk.WaitingOn)
				}
			}
			if tc.reason != "" {
				if got := counted(queuesvc.FunctionRejected(f.metrics).WithLabelValues("duel", tc.reason)); got != 1 {
					t.Fatalf("%s rejections: %v", tc.reason, got)
				}
			}
			matched := 0
			evs, err := f.svc.Events(context.Background(), "duel", 0, 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Type == queue.EventMatched {
					matched++
				}
			}
			if matched != 0 {
				t.Fatalf("%d matched events", matched)
			}
		})
	}
}

// In mode shadow the built-in pass's matches commit; the function's, of the same pool, are
// checked and measured beside them in the stats, never committed.
func TestMatchFunctionShadow(t *testing.T) {
	t.Parallel()
	mf := replace(queue.FailureWait)
	mf.Mode = queue.FunctionShadow
	f := newFunctionFixture(t, mf, func(w http.ResponseWriter, _ *http.Request, req poolRequest) {
		if len(req.Pool) < 2 {
			answer(w, `{"matches":[]}`)
			return
		}
		answer(w, `{"matches":[{"teams":[{"tickets":["`+req.Pool[1].ID+`"]},{"tickets":["`+req.Pool[0].ID+`"]}]},`+
			`{"teams":[{"tickets":["tk-gone"]},{"tickets":["`+req.Pool[0].ID+`"]}]}]}`)
	})
	ids := f.tickets(t, "alice", "bob")
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	a := waitFor(t, f.svc, ids[0], queue.Matched)
	if !strings.HasPrefix(a.Assignment.MatchID, "m-") {
		t.Fatalf("in shadow, matched by %s, not the rules", a.Assignment.MatchID)
	}
	shadowDone(t, f)
	f.advance(t, 2*queue.StatsRefresh) // its tick takes the shadow call's outcome
	st, err := f.svc.Stats(context.Background(), "duel")
	if err != nil || st.Shadow == nil {
		t.Fatalf("stats %+v %v", st.Shadow, err)
	}
	sh := st.Shadow
	if sh.Rules.Matches != 1 || sh.Rules.TicketsMatched != 2 || sh.Function.Matches != 1 || sh.Function.TicketsMatched != 2 ||
		sh.Function.Rejected[queue.RejectUnknown] != 1 || sh.FunctionCalls != 1 || !sh.Rules.HasWait || !sh.Function.HasWait {
		t.Fatalf("shadow stats: %+v", sh)
	}
	// As the leader publishes them to the store for the other replicas.
	b, err := queue.EncodeStats(st)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := queue.DecodeStats(b); err != nil || !reflect.DeepEqual(back.Shadow, st.Shadow) {
		t.Fatalf("the shadow stats read back: %+v %v, want %+v", back.Shadow, err, st.Shadow)
	}
}

// shadowDone waits until the fixture's queue's shadow call in flight, if any, has ended.
func shadowDone(t *testing.T, f functionFixture) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := queuesvc.ShadowCallDone(ctx, f.svc, "duel"); err != nil {
		t.Fatalf("the shadow call did not end within 10 s: %v", err)
	}
}

func counted(c prometheus.Counter) float64 {
	var out dto.Metric
	if err := c.Write(&out); err != nil {
		panic(err)
	}
	return out.GetCounter().GetValue()
}

// noMatches is a Matcher that expires tickets past their time and matches none.
type noMatches struct{}

func (noMatches) Match(_ queue.Queue, waiting []queue.Ticket, now time.Time) (queue.TickWrite, error) {
	var w queue.TickWrite
	for _, t := range waiting {
		if !now.Before(t.ExpiresAt) {
			w.Expired = append(w.Expired, queue.Expiry{TicketID: t.ID, Reason: "ttl"})
		}
	}
	return w, nil
}

// In shadow, a function's match of tickets the rules leave waiting is proposed again at each
// call; it is counted once (live, its tickets would have left at the first).
func TestMatchFunctionShadowCountsATicketOnce(t *testing.T) {
	t.Parallel()
	mf := replace(queue.FailureWait)
	mf.Mode = queue.FunctionShadow
	f := newFunctionFixture(t, mf, func(w http.ResponseWriter, _ *http.Request, req poolRequest) {
		answer(w, `{"matches":[{"teams":[{"tickets":["`+req.Pool[0].ID+`"]},{"tickets":["`+req.Pool[1].ID+`"]}]}]}`)
	})
	f.svc = queuesvc.New(queuesvc.Deps{Store: f.store, Ratings: f.ratings, Matcher: noMatches{}, Config: queuesvc.Config{WebhookAllow: loopback},
		Clock: f.clock, Outbound: posts(queuesvc.Config{WebhookAllow: loopback}), Metrics: f.metrics})
	f.tickets(t, "alice", "bob")
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	for range 4 { // each tick takes the last call's outcome and makes the next call
		shadowDone(t, f)
		f.advance(t, queue.StatsRefresh)
	}
	st, err := f.svc.Stats(context.Background(), "duel")
	if err != nil || st.Shadow == nil || st.Shadow.FunctionCalls != 4 || st.Shadow.Function.Matches != 1 ||
		st.Shadow.Function.TicketsMatched != 2 || st.Shadow.Rules.Matches != 0 {
		t.Fatalf("shadow stats after 4 calls proposing one match: %+v %v", st.Shadow, err)
	}
}

// A function's match takes the built-in pass's path: in a queue with a ready check it is
// proposed, and made once both players accept.
func TestMatchFunctionMatchesGoThroughTheReadyCheck(t *testing.T) {
	t.Parallel()
	f := newFunctionFixture(t, replace(queue.FailureWait), func(w http.ResponseWriter, _ *http.Request, req poolRequest) {
		if len(req.Pool) < 2 {
			answer(w, `{"matches":[]}`)
			return
		}
		answer(w, `{"matches":[{"teams":[{"tickets":["`+req.Pool[1].ID+`"]},{"tickets":["`+req.Pool[0].ID+`"]}]}]}`)
	}, func(q *queue.Queue) { q.Acceptance = &queue.Acceptance{Timeout: 20 * time.Second} })
	ids := f.tickets(t, "alice", "bob")
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	pa := waitFor(t, f.svc, ids[0], queue.Proposed)
	ctx := context.Background()
	for _, p := range []string{"alice", "bob"} {
		if _, err := f.svc.Answer(ctx, pa.Proposal.MatchID, p, true); err != nil {
			t.Fatal(err)
		}
	}
	a := waitFor(t, f.svc, ids[0], queue.Matched)
	m, err := f.svc.GetMatch(ctx, a.Assignment.MatchID)
	if err != nil || m.ID != pa.Proposal.MatchID || m.Teams[0].Players[0].ID != "bob" || m.Teams[1].Players[0].ID != "alice" {
		t.Fatalf("the match after the ready check: %+v %v", m, err)
	}
}

// The tickets past max_pool (the newer ones) wait for a place in the pool, and say so; the
// ones sent and left out say that instead.
func TestMatchFunctionPoolHoldsTheOldest(t *testing.T) {
	t.Parallel()
	mf := replace(queue.FailureWait)
	mf.MaxPool = 2
	var sent atomic.Value
	f := newFunctionFixture(t, mf, func(w http.ResponseWriter, _ *http.Request, req poolRequest) {
		sent.Store(len(req.Pool))
		answer(w, `{"matches":[]}`)
	})
	ids := f.tickets(t, "alice", "bob", "carol")
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	if n, _ := sent.Load().(int); n != 2 {
		t.Fatalf("a pool of %d tickets, want max_pool's 2", n)
	}
	for i, want := range []string{"not in the match function's matches", "not in the match function's matches", "max_pool 2"} {
		if tk := f.ticket(t, ids[i]); tk.WaitingOn == nil || tk.WaitingOn.Rule != queue.WaitMatchFunction || !strings.Contains(tk.WaitingOn.Detail, want) {
			t.Fatalf("ticket %d waits on %+v, want %q", i, tk.WaitingOn, want)
		}
	}
}
