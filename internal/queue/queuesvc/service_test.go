package queuesvc_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/outbound"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// pairInOrder is a Matcher for 1v1 queues: it expires tickets past their expiry and pairs the
// others two by two, oldest first. The real pass is matchmaker/tick's; this one makes the
// service's own behaviour easy to see.
type pairInOrder struct{}

func (pairInOrder) Match(q queue.Queue, waiting []queue.Ticket, now time.Time) (queue.TickWrite, error) {
	var w queue.TickWrite
	var open []queue.Ticket
	for _, t := range waiting {
		if !now.Before(t.ExpiresAt) {
			w.Expired = append(w.Expired, queue.Expiry{TicketID: t.ID, Reason: "ttl"})
			continue
		}
		open = append(open, t)
	}
	for i := 0; i+1 < len(open); i += 2 {
		w.Matches = append(w.Matches, queuetest.Match2v2(fmt.Sprintf("m-%s-%s", open[i].ID, open[i+1].ID), open[i], open[i+1]))
	}
	return w, nil
}

// newClock is a test's clock, at T0: it moves when the test advances it.
func newClock() *queuetest.Clock { return queuetest.NewClock(queuetest.T0) }

// advance moves the clock on by d, then waits until svc, leading queueName, has ticked at the
// new time: what that time brings (matches, expiries, deadlines) is done.
func advance(t *testing.T, c *queuetest.Clock, svc *queuesvc.Service, queueName string, d time.Duration) {
	t.Helper()
	c.Advance(d)
	ticked(t, c, svc, queueName)
}

// ticked waits until svc, leading queueName, has ticked at the clock's time (or later).
func ticked(t *testing.T, c *queuetest.Clock, svc *queuesvc.Service, queueName string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := queuesvc.Ticked(ctx, svc, queueName, c.Now()); err != nil {
		t.Fatalf("no tick of %s at %v after 10 s: %v", queueName, c.Now(), err)
	}
}

// waitTimer waits until the service sets a timer due d from now (a retry, a backoff), and
// advances the clock to it.
func waitTimer(t *testing.T, c *queuetest.Clock, d time.Duration, what string) {
	t.Helper()
	c.AdvanceTo(timerSet(t, c, d, what))
}

// timerSet waits until the service sets a timer due d from now, and says when that is.
func timerSet(t *testing.T, c *queuetest.Clock, d time.Duration, what string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	at := c.Now().Add(d)
	if err := c.WaitTimer(ctx, at); err != nil {
		t.Fatalf("no timer for %s after 10 s: %v", what, err)
	}
	return at
}

// awaitFeeds waits until cond holds (10 s at most), checking it again at each change of
// svc's feeds (waiters, watched tickets, heads): for what the service does on its own
// goroutines, a long-poll or a stream that began to wait.
func awaitFeeds(t *testing.T, svc *queuesvc.Service, what string, cond func() bool) {
	t.Helper()
	if !awaitEach(cond, func() <-chan struct{} { return queuesvc.FeedsChanged(svc) }) {
		t.Fatalf("after 10 s: %s", what)
	}
}

type fixture struct {
	svc     *queuesvc.Service
	store   *memstore.Store
	ratings *ratings.Service
	clock   *queuetest.Clock
}

func newFixture(t *testing.T, cfg queuesvc.Config) fixture {
	t.Helper()
	store := memstore.New()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	c := newClock()
	svc := queuesvc.New(queuesvc.Deps{Store: store, Ratings: rs, Matcher: pairInOrder{}, Config: cfg, Clock: c, Outbound: posts(cfg)})
	return fixture{svc: svc, store: store, ratings: rs, clock: c}
}

// posts is the service's outbound HTTP under cfg's address rule and timeout.
func posts(cfg queuesvc.Config) queue.Outbound {
	return outbound.New(queue.WebhookPolicy{Allow: cfg.WebhookAllow}, cmp.Or(cfg.WebhookTimeout, 5*time.Second))
}

// advance moves the fixture's clock on by d and waits for the tick of duel it brings.
func (f fixture) advance(t *testing.T, d time.Duration) {
	t.Helper()
	advance(t, f.clock, f.svc, "duel", d)
}

func (f fixture) queue(t *testing.T, mutate func(q *queue.Queue)) queue.Queue {
	t.Helper()
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	if mutate != nil {
		mutate(&q)
	}
	stored, created, err := f.svc.PutQueue(context.Background(), q)
	if err != nil || !created {
		t.Fatalf("put queue: %v (created %v)", err, created)
	}
	return stored
}

func rating(r float64) *float64 { return &r }

func solo(queueName, id string) queue.NewTicket {
	return queue.NewTicket{Queue: queueName, Players: []queue.NewPlayer{{ID: id}}}
}

// A ticket's players are rated inline, else by their stored rating in the queue's context (a
// weight on the matchmaking scale: 50 is 1000), else at the default.
func TestCreateTicketResolvesRatings(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize = 3, 3 })
	win := 0
	if _, err := f.ratings.Record(ctx, ratings.Result{MatchID: "r1", GameType: "ctf", Map: "face", DurationS: 1200, Winner: &win,
		Teams: []ratings.Team{storetest.Team("red", "alice"), storetest.Team("blue", "bob")}}); err != nil {
		t.Fatal(err)
	}
	tk, replayed, err := f.svc.CreateTicket(ctx, queue.NewTicket{Queue: "duel",
		Players: []queue.NewPlayer{{ID: "alice"}, {ID: "carol", Rating: rating(1234)}, {ID: "newcomer"}}})
	if err != nil || replayed {
		t.Fatal(err, replayed)
	}
	c, _ := f.ratings.Context(ctx, "ctf", nil)
	w, _ := f.ratings.Weights(ctx, c, []ratings.Participant{{ID: "alice"}})
	want := []queue.Player{
		{ID: "alice", Rating: w[0].Value * ratings.MatchRatingScale, Source: queue.RatingStored},
		{ID: "carol", Rating: 1234, Source: queue.RatingInline},
		{ID: "newcomer", Rating: 1000, Source: queue.RatingDefault},
	}
	for i, p := range tk.Players {
		if !reflect.DeepEqual(p, want[i]) {
			t.Errorf("player %d: %+v, want %+v", i, p, want[i])
		}
	}
	if tk.Players[0].Rating <= 1000 || tk.Status != queue.Searching || !tk.CreatedAt.Equal(queuetest.T0) ||
		!tk.ExpiresAt.Equal(queuetest.T0.Add(queue.DefaultTicketTTL)) || len(tk.ID) < 10 {
		t.Fatalf("ticket %+v", tk)
	}
}

// Every bad field of a ticket is named, and a player already searching is a 409 naming the
// ticket that holds him.
func TestCreateTicketRejectsBadTickets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize, q.Regions = 3, 2, []string{"eu", "us"} })
	first, _, err := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	p := func(ids ...string) []queue.NewPlayer {
		var out []queue.NewPlayer
		for _, id := range ids {
			out = append(out, queue.NewPlayer{ID: id})
		}
		return out
	}
	tests := []struct {
		name  string
		in    queue.NewTicket
		code  apperr.Code
		field string
	}{
		{"no players", queue.NewTicket{Queue: "duel"}, apperr.Invalid, "players"},
		{"a party above max_party_size", queue.NewTicket{Queue: "duel", Players: p("a", "b", "c")}, apperr.Invalid, "players"},
		{"a player twice in a party", queue.NewTicket{Queue: "duel", Players: p("a", "a")}, apperr.Invalid, "players[1].id"},
		{"a bad id", queue.NewTicket{Queue: "duel", Players: p("a b ")}, apperr.Invalid, "players[0].id"},
		{"a rating that is not finite", queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: "a", Rating: rating(1e300)}}}, apperr.Invalid, "players[0].rating"},
		{"an unknown region", queue.NewTicket{Queue: "duel", Players: p("a"), Latencies: map[string]float64{"mars": 20}}, apperr.Invalid, "latencies_ms"},
		{"a negative latency", queue.NewTicket{Queue: "duel", Players: p("a"), Latencies: map[string]float64{"eu": -1}}, apperr.Invalid, "latencies_ms"},
		{"a ttl too long", queue.NewTicket{Queue: "duel", Players: p("a"), TTL: 48 * time.Hour}, apperr.Invalid, "ttl_s"},
		{"a ttl under a second", queue.NewTicket{Queue: "duel", Players: p("a"), TTL: time.Millisecond}, apperr.Invalid, "ttl_s"},
		{"no such queue", solo("nowhere", "a"), apperr.NotFound, ""},
		{"already searching", queue.NewTicket{Queue: "duel", Players: p("zed", "alice")}, apperr.Conflict, "players[1].id"},
	}
	for _, tt := range tests {
		_, _, err := f.svc.CreateTicket(ctx, tt.in)
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
			continue
		}
		if tt.field != "" && (len(e.Fields) == 0 || e.Fields[0].Field != tt.field) {
			t.Errorf("%s: fields %+v, want %s", tt.name, e.Fields, tt.field)
		}
		if tt.code == apperr.Conflict && e.Fields[0].Message != "is already searching in ticket "+first.ID {
			t.Errorf("%s: %q does not name the ticket %s", tt.name, e.Fields[0].Message, first.ID)
		}
	}
}

// The same Idempotency-Key with the same request (by meaning) gives the same ticket; with
// another request it is a conflict.
func TestCreateTicketIsIdempotentByKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize = 2, 2 })
	req := queue.NewTicket{Queue: "duel", IdempotencyKey: "k1", Latencies: map[string]float64{"eu": 20, "us": 90},
		Players: []queue.NewPlayer{{ID: "a"}, {ID: "b", Rating: rating(1100)}}}
	first, replayed, err := f.svc.CreateTicket(ctx, req)
	if err != nil || replayed {
		t.Fatal(err)
	}
	same := req
	same.Players = []queue.NewPlayer{{ID: "b", Rating: rating(1100)}, {ID: "a"}} // a party is a set
	again, replayed, err := f.svc.CreateTicket(ctx, same)
	if err != nil || !replayed || again.ID != first.ID {
		t.Fatalf("a retry: %+v replayed %v, %v", again, replayed, err)
	}
	other := req
	other.Players = []queue.NewPlayer{{ID: "a"}, {ID: "b", Rating: rating(1200)}}
	_, _, err = f.svc.CreateTicket(ctx, other)
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.Conflict || len(e.Fields) != 1 || e.Fields[0].Field != "Idempotency-Key" {
		t.Fatalf("the key with another request: %v, want a conflict naming Idempotency-Key", err)
	}
}

// runService runs the tick loop until the test ends.
func runService(t *testing.T, svc *queuesvc.Service) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// A long-poll answers as soon as the leader's tick matches the ticket, with its assignment;
// the match can be read by its id.
func TestTheLoopMatchesTicketsAndALongPollSeesIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, nil)
	a, _, err := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan queue.Ticket, 1)
	go func() {
		tk, err := f.svc.GetTicket(ctx, a.ID, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		polled <- tk
	}()
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	f.advance(t, 50*time.Millisecond) // a second tick with one ticket: nothing to match
	if tk, _ := f.svc.GetTicket(ctx, a.ID, 0); tk.Status != queue.Searching {
		t.Fatalf("alone in the queue: %s", tk.Status)
	}
	f.clock.Advance(time.Second) // bob waits less: alice is the older, on team 0
	b, _, err := f.svc.CreateTicket(ctx, solo("duel", "bob"))
	if err != nil {
		t.Fatal(err)
	}
	f.advance(t, 50*time.Millisecond)
	var got queue.Ticket
	select {
	case got = <-polled:
	case <-time.After(5 * time.Second):
		t.Fatal("the long-poll did not answer after the match")
	}
	if got.Status != queue.Matched || got.Assignment == nil || got.Assignment.Team != 0 {
		t.Fatalf("long-poll answer: %+v", got)
	}
	m, err := f.svc.GetMatch(ctx, got.Assignment.MatchID)
	if err != nil || len(m.Teams) != 2 || m.Teams[1].Players[0].TicketID != b.ID {
		t.Fatalf("match %+v, %v", m, err)
	}
	// A long-poll of a finished ticket answers at once.
	start := time.Now()
	if tk, err := f.svc.GetTicket(ctx, b.ID, 10*time.Second); err != nil || tk.Status != queue.Matched || time.Since(start) > time.Second {
		t.Fatalf("long-poll of a matched ticket: %+v %v after %v", tk, err, time.Since(start))
	}
}

// A long-poll with nothing happening answers the searching ticket when its wait ends.
func TestALongPollEndsWithItsWait(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, nil)
	a, _, _ := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	start := time.Now()
	tk, err := f.svc.GetTicket(ctx, a.ID, 100*time.Millisecond)
	if err != nil || tk.Status != queue.Searching || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("%+v %v after %v", tk, err, time.Since(start))
	}
}

// Tickets past their expiry expire at the next tick, with the reason.
func TestTicketsExpire(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, nil)
	a, _, _ := f.svc.CreateTicket(ctx, queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: "alice"}}, TTL: 10 * time.Second})
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	f.advance(t, 11*time.Second)
	tk, err := f.svc.GetTicket(ctx, a.ID, 0)
	if err != nil || tk.Status != queue.Expired || tk.Reason != "ttl" {
		t.Fatalf("%+v %v", tk, err)
	}
}

// Deliveries are signed, retried until the receiver answers 2xx, and each event is
// acknowledged once in order.
func TestWebhooksAreSignedAndRetried(t *testing.T) {
	t.Parallel()
	const secret = "a-secret-of-16-bytes-or-more"
	var mu sync.Mutex
	var got []map[string]any
	attempted := make(chan struct{}, 5) // at each delivery, failed or not
	failures := 2
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := client.VerifyWebhook(secret, r.Header, body, queuetest.T0, time.Hour); err != nil {
			t.Errorf("signature %q: %v", r.Header.Get(queue.SignatureHeader), err)
		}
		mu.Lock()
		defer mu.Unlock()
		defer func() { attempted <- struct{}{} }()
		if failures > 0 {
			failures--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var ev map[string]any
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Error(err)
		}
		if r.Header.Get(queue.DeliveryHeader) != fmt.Sprintf("duel:%v", ev["seq"]) || r.Header.Get(queue.EventHeader) != ev["type"] {
			t.Errorf("headers %v for %v", r.Header, ev)
		}
		got = append(got, ev)
	}))
	defer hook.Close()
	f := newFixture(t, queuesvc.Config{WebhookAllow: loopback})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.Webhook = &queue.Webhook{URL: hook.URL, Secret: secret} })
	a, _, _ := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	f.clock.Advance(time.Second)
	b, _, _ := f.svc.CreateTicket(ctx, solo("duel", "bob"))
	c, _, _ := f.svc.CreateTicket(ctx, solo("duel", "carol"))
	if _, err := f.svc.CancelTicket(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	runService(t, f.svc) // its first tick matches alice and bob, and wakes the deliverer
	<-attempted
	waitTimer(t, f.clock, time.Second, "the first retry")
	<-attempted
	waitTimer(t, f.clock, 2*time.Second, "the second retry")
	for range 3 {
		<-attempted
	}
	mu.Lock()
	defer mu.Unlock()
	if got[0]["type"] != "cancelled" || got[0]["ticket_id"] != c.ID || got[0]["seq"] != 1.0 ||
		got[1]["type"] != "matched" || got[1]["seq"] != 2.0 || got[2]["seq"] != 3.0 {
		t.Fatalf("deliveries %v", got)
	}
	ids := map[any]bool{got[1]["ticket_id"]: true, got[2]["ticket_id"]: true}
	if !ids[a.ID] || !ids[b.ID] || got[1]["match_id"] == nil || got[1]["team"] == nil {
		t.Fatalf("matched deliveries %v", got[1:])
	}
	// The cursor moves once the receiver's answer is back, a moment after it recorded the
	// event: when the deliverer waits for its next round, a second on.
	timerSet(t, f.clock, time.Second, "the deliverer's next round")
	if cur, _ := f.store.WebhookCursor(ctx, "duel"); cur != 3 {
		t.Fatalf("the webhook cursor is %d, want 3", cur)
	}
}

// Deleting a queue cancels its searching tickets.
func TestDeletingAQueueCancelsItsTickets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, nil)
	a, _, _ := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	if err := f.svc.DeleteQueue(ctx, "duel"); err != nil {
		t.Fatal(err)
	}
	if tk, _ := f.svc.GetTicket(ctx, a.ID, 0); tk.Status != queue.Cancelled || tk.Reason != "queue deleted" {
		t.Fatalf("%+v", tk)
	}
	if _, err := f.svc.GetQueue(ctx, "duel"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("deleted queue: %v", err)
	}
}
