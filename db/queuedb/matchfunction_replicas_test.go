package queuedb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/outbound"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// pairingFunction is a match function that pairs its pool two by two, oldest first, and
// records every match it proposed (its two ticket ids, joined).
type pairingFunction struct {
	mu       sync.Mutex
	proposed map[string]bool
	calls    atomic.Int32
}

func (f *pairingFunction) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	var req struct {
		Pool []struct {
			ID string `json:"id"`
		} `json:"pool"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var matches []string
	f.mu.Lock()
	for i := 0; i+1 < len(req.Pool); i += 2 {
		a, b := req.Pool[i].ID, req.Pool[i+1].ID
		f.proposed[a+"+"+b] = true
		matches = append(matches, `{"teams":[{"tickets":["`+a+`"]},{"tickets":["`+b+`"]}]}`)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"matches":[`+strings.Join(matches, ",")+`]}`)
}

// functionReplicas are two services on two stores of one database, each running its loop,
// posting over loopback.
func functionReplicas(t *testing.T) ([]*queuedb.Store, []*queuesvc.Service, func(sql string, args ...any)) {
	t.Helper()
	stores, pool := openReplicasWith(t, 2, func(int) queuedb.Options { return queuedb.Options{LeaderLease: testLease} })
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	svcs := make([]*queuesvc.Service, 2)
	for i, st := range stores {
		svcs[i] = queuesvc.New(queuesvc.Deps{Store: st, Matcher: queue.TickPass{},
			Outbound: outbound.New(queue.WebhookPolicy{Allow: allow}, queuesvc.DefaultWebhookTimeout),
			Ratings:  ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()),
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)).With("replica", i),
			Config:   queuesvc.Config{QueueRefresh: 20 * time.Millisecond, WebhookAllow: allow}})
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	return stores, svcs, exec
}

func runReplica(t *testing.T, svc *queuesvc.Service) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// functionQueue is a 1v1 queue ticking every 50 ms whose match function is at url.
func functionQueue(name, url string, timeout time.Duration, onFailure queue.FunctionFailure) queue.Queue {
	q := queue.DefaultQueue(name)
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	q.MatchFunction = &queue.MatchFunction{URL: url, Secret: "a-match-function-secret", Timeout: timeout,
		Mode: queue.FunctionReplace, OnFailure: onFailure, MaxPool: 1000}
	return q
}

// On Postgres, two replicas: a function's matches are what it proposed, across the leader's
// death (its session ended mid-stream, a replica leading again on a new session: either one):
// every ticket is matched once, in a match the function proposed, none lost or in two matches.
func TestQueueMatchFunctionAcrossALeaderKill(t *testing.T) {
	t.Parallel()
	stores, svcs, exec := functionReplicas(t)
	fn := &pairingFunction{proposed: map[string]bool{}}
	srv := httptest.NewServer(fn)
	t.Cleanup(srv.Close)
	ctx := testCtx(t)
	if _, _, err := svcs[0].PutQueue(ctx, functionQueue("duel", srv.URL, time.Second, queue.FailureWait)); err != nil {
		t.Fatal(err)
	}
	var ids []string
	feed := func(svc *queuesvc.Service, n int) {
		t.Helper()
		for range n {
			nt := queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: fmt.Sprintf("p%03d", len(ids))}}}
			tk, _, err := svc.CreateTicket(ctx, nt)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tk.ID)
		}
	}
	runReplica(t, svcs[0])
	waitFor(t, 10*time.Second, "replica 0 leads", func() bool { return stores[0].LeaseLeft("duel") > 0 })
	runReplica(t, svcs[1])
	feed(svcs[0], 20)
	waitFor(t, 10*time.Second, "a first call", func() bool { return fn.calls.Load() > 0 })
	killed := stores[0].LeaderPID()
	exec(`SELECT pg_terminate_backend($1)`, killed)
	feed(svcs[1], 20)
	// Either replica may lead next: replica 0 connects again after its backoff while replica 1
	// tries at each step of its loop, and on a loaded host either gets the lock first.
	waitFor(t, 10*time.Second, "a leader after the kill", func() bool {
		pid := stores[0].LeaderPID()
		return stores[1].LeaseLeft("duel") > 0 || pid != 0 && pid != killed && stores[0].LeaseLeft("duel") > 0
	})
	feed(svcs[1], 20)

	matchOf := map[string]string{} // ticket -> match
	waitFor(t, 30*time.Second, "every ticket matched", func() bool {
		for _, id := range ids {
			if matchOf[id] != "" {
				continue
			}
			tk, err := svcs[1].GetTicket(ctx, id, 0)
			if err != nil || tk.Status != queue.Matched {
				return false
			}
			matchOf[id] = tk.Assignment.MatchID
		}
		return true
	})
	byMatch := map[string][]string{}
	for _, id := range ids {
		byMatch[matchOf[id]] = append(byMatch[matchOf[id]], id)
	}
	fn.mu.Lock()
	defer fn.mu.Unlock()
	for mid, tickets := range byMatch {
		m, err := svcs[1].GetMatch(ctx, mid)
		if err != nil {
			t.Fatal(err)
		}
		got := m.Tickets()
		slices.Sort(got)
		slices.Sort(tickets)
		if !slices.Equal(got, tickets) || len(m.Teams) != 2 {
			t.Fatalf("match %s holds %v; its tickets' assignments say %v", mid, got, tickets)
		}
		if !fn.proposed[m.Teams[0].Players[0].TicketID+"+"+m.Teams[1].Players[0].TicketID] {
			t.Fatalf("match %s (%v) is not one the function proposed", mid, m.Tickets())
		}
	}
	if len(byMatch) != len(ids)/2 {
		t.Fatalf("%d matches of %d tickets", len(byMatch), len(ids))
	}
}

// On Postgres, two replicas: a function that sleeps past timeout_ms leaves the tickets
// searching (on_failure wait; their waiting_on says so on the leader) and is called once in
// its first backoff step, not at each tick; with on_failure rules, the built-in pass matches
// them.
func TestQueueMatchFunctionThatSleepsPastItsTimeout(t *testing.T) {
	t.Parallel()
	stores, svcs, _ := functionReplicas(t)
	var calls atomic.Int32
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	ctx := testCtx(t)
	for _, q := range []queue.Queue{functionQueue("waits", srv.URL+"/w", 100*time.Millisecond, queue.FailureWait),
		functionQueue("rules", srv.URL+"/r", 100*time.Millisecond, queue.FailureRules)} {
		if _, _, err := svcs[0].PutQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var waiting, ruled []string
	for i := range 4 {
		a, _, err := svcs[i%2].CreateTicket(ctx, queue.NewTicket{Queue: "waits", Players: []queue.NewPlayer{{ID: fmt.Sprintf("w%d", i)}}})
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := svcs[i%2].CreateTicket(ctx, queue.NewTicket{Queue: "rules", Players: []queue.NewPlayer{{ID: fmt.Sprintf("r%d", i)}}})
		if err != nil {
			t.Fatal(err)
		}
		waiting, ruled = append(waiting, a.ID), append(ruled, b.ID)
	}
	runReplica(t, svcs[0])
	runReplica(t, svcs[1])
	waitFor(t, 20*time.Second, "the rules matched the rules queue", func() bool {
		for _, id := range ruled {
			if tk, err := svcs[0].GetTicket(ctx, id, 0); err != nil || tk.Status != queue.Matched {
				return false
			}
		}
		return true
	})
	leader := -1
	waitFor(t, 10*time.Second, "a leader of waits that says why its tickets wait", func() bool {
		for i, st := range stores {
			if st.LeaseLeft("waits") <= 0 {
				continue
			}
			tk, err := svcs[i].GetTicket(ctx, waiting[0], 0)
			if err == nil && tk.WaitingOn != nil && tk.WaitingOn.Rule == queue.WaitMatchFunction {
				leader = i
				return strings.HasPrefix(tk.WaitingOn.Detail, "timed out after 100 ms")
			}
		}
		return false
	})
	// Both queues' functions failed once; the backoff holds the next call 2 s after it: a
	// second of ticks (20 of them) calls neither again.
	before := calls.Load()
	time.Sleep(time.Second)
	if got := calls.Load(); got != before || before > 2 {
		t.Fatalf("%d calls, then %d a second of ticks later; want 2 (one a queue) and none more within the backoff", before, got)
	}
	for _, id := range waiting {
		if tk, err := svcs[leader].GetTicket(ctx, id, 0); err != nil || tk.Status != queue.Searching {
			t.Fatalf("ticket %s of a queue whose function times out: %+v %v", id, tk.Status, err)
		}
	}
}

// On Postgres, replace mode leaves to the built-in pass what the function is never sent: a
// backfill is filled from the tickets the function left out, through the store's commit, and
// a party the queue no longer admits (team_size shrunk to 1) expires with reason invalid.
// Neither the backfill nor the party is in any pool sent.
func TestQueueMatchFunctionFillsBackfillsAndExpiresInvalid(t *testing.T) {
	t.Parallel()
	_, svcs, _ := functionReplicas(t)
	var mu sync.Mutex
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Pool []struct {
				ID string `json:"id"`
			} `json:"pool"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, p := range req.Pool {
			sent = append(sent, p.ID)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"matches":[]}`)
	}))
	t.Cleanup(srv.Close)
	ctx, svc := testCtx(t), svcs[0]
	for _, name := range []string{"fill", "shrunk"} {
		q := functionQueue(name, srv.URL, time.Second, queue.FailureWait)
		q.TeamSize, q.MaxPartySize, q.Regions = 2, 2, []string{"eu", "us"}
		if _, _, err := svc.PutQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	bf, _, err := svc.CreateBackfill(ctx, queue.NewBackfill{Queue: "fill", MatchID: "running-1", OpenSlots: []int{1, 0}, Region: "eu",
		Teams: []queue.NewBackfillTeam{{Players: []queue.NewPlayer{{ID: "r1"}}},
			{Players: []queue.NewPlayer{{ID: "b1"}, {ID: "b2"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	joiner, _, err := svc.CreateTicket(ctx, queue.NewTicket{Queue: "fill", Players: []queue.NewPlayer{{ID: "j1"}},
		Latencies: map[string]float64{"eu": 20}})
	if err != nil {
		t.Fatal(err)
	}
	party, _, err := svc.CreateTicket(ctx, queue.NewTicket{Queue: "shrunk", Players: []queue.NewPlayer{{ID: "p1"}, {ID: "p2"}}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := svc.GetQueue(ctx, "shrunk")
	if err != nil {
		t.Fatal(err)
	}
	q.TeamSize, q.MaxPartySize = 1, 1
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	alice, _, err := svc.CreateTicket(ctx, queue.NewTicket{Queue: "shrunk", Players: []queue.NewPlayer{{ID: "alice"}}})
	if err != nil {
		t.Fatal(err)
	}
	runReplica(t, svc)
	status := func(id string) queue.Ticket {
		t.Helper()
		tk, err := svc.GetTicket(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	waitFor(t, 20*time.Second, "the joiner matched and the party expired", func() bool {
		return status(joiner.ID).Status != queue.Searching && status(party.ID).Status != queue.Searching
	})
	j, b, p := status(joiner.ID), status(bf.ID), status(party.ID)
	if j.Status != queue.Matched || j.Assignment == nil || j.Assignment.MatchID != "running-1" || j.Assignment.FillID == "" {
		t.Fatalf("the joiner: %s %+v", j.Status, j.Assignment)
	}
	if b.Status != queue.Matched || b.Assignment == nil || b.Assignment.FillID != j.Assignment.FillID {
		t.Fatalf("the backfill: %s %+v", b.Status, b.Assignment)
	}
	if p.Status != queue.Expired || p.Reason != queue.ReasonInvalid {
		t.Fatalf("the party: %s (%q), want expired (invalid)", p.Status, p.Reason)
	}
	waitFor(t, 20*time.Second, "alice sent to the function", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(sent, alice.ID)
	})
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(sent, bf.ID) || slices.Contains(sent, party.ID) || !slices.Contains(sent, joiner.ID) {
		t.Fatalf("sent %v: want the joiner %s and alice %s, neither the backfill %s nor the party %s", sent, joiner.ID, alice.ID, bf.ID, party.ID)
	}
}
