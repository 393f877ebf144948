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
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/outbound"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// deliveryLog is a webhook receiver's record of the deliveries it acknowledged, by delivery
// id, in the order they came. The delivery of event hold waits, the first time, until the
// test lets it answer.
type deliveryLog struct {
	mu         sync.Mutex
	deliveries []string
	hold       int64
	arrived    chan struct{} // closed when the held delivery arrives
	release    chan struct{} // closed by the test to answer it
}

func (d *deliveryLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev struct{ Seq int64 }
	if err := json.Unmarshal(body, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	held := ev.Seq == d.hold && !slices.Contains(d.deliveries, r.Header.Get(queue.DeliveryHeader))
	d.deliveries = append(d.deliveries, r.Header.Get(queue.DeliveryHeader))
	d.mu.Unlock()
	if held {
		close(d.arrived)
		<-d.release
	}
	w.WriteHeader(http.StatusNoContent)
}

func (d *deliveryLog) snapshot() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.deliveries)
}

// Two replicas on one database; the queue's leader is deposed while it posts its webhook
// (its lock's session is ended while the receiver holds a delivery) and the other replica
// leads from its next tick. The receiver still gets every event once, in order: the deposed
// leader posted the held event, and its cursor write went through, because the outbox stays
// its own until its lease runs out; the new leader posts from there. (Before the lease, the
// new leader posted the held event again, and the two posted side by side.)
//
// The deposed leader's answer and cursor write must land within its lease, counted from its
// last renewal before its session ended: the lease here is longer than the other tests'
// testLease, whose 1.5 s a loaded host's stall between the release and the write can outlast:
// the new leader then posts the held event again (a 2 s pause put in the receiver's answer
// gives duel:8 twice with 1.5 s, and once with 4 s). It costs the test the handover's wait.
func TestQueueWebhookOnceAcrossLeaders(t *testing.T) {
	t.Parallel()
	const lease = 4 * time.Second
	stores, pool := openReplicasWith(t, 2, func(int) queuedb.Options { return queuedb.Options{LeaderLease: lease} })
	const held = 8
	rc := &deliveryLog{hold: held, arrived: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	var released sync.Once
	release := func() { released.Do(func() { close(rc.release) }) }
	t.Cleanup(release)

	svcs := make([]*queuesvc.Service, 2)
	for i, st := range stores {
		allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		svcs[i] = queuesvc.New(queuesvc.Deps{Store: st, Matcher: queue.TickPass{},
			Outbound: outbound.New(queue.WebhookPolicy{Allow: allow}, queuesvc.DefaultWebhookTimeout),
			Ratings:  ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()),
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)).With("replica", i),
			Config: queuesvc.Config{QueueRefresh: 20 * time.Millisecond, WebhookBackoff: 50 * time.Millisecond,
				WebhookAllow: allow}})
	}
	ctx := testCtx(t)
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	q.Webhook = &queue.Webhook{URL: srv.URL, Secret: "a-secret-of-16-bytes-or-more"}
	if _, _, err := svcs[0].PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	players := 0
	feed := func(svc *queuesvc.Service, n int) {
		t.Helper()
		for range n {
			players++
			nt := queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: fmt.Sprintf("p%03d", players)}}}
			if _, _, err := svc.CreateTicket(ctx, nt); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(svc *queuesvc.Service) {
		rctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = svc.Run(rctx) }()
		t.Cleanup(func() { release(); cancel(); <-done })
	}

	// Replica 0 leads, and is posting event 8 when its session is ended.
	run(svcs[0])
	waitFor(t, 10*time.Second, "replica 0 leads", func() bool { return stores[0].LeaseLeft("duel") > 0 })
	run(svcs[1])
	feed(svcs[0], 2*held)
	select {
	case <-rc.arrived:
	case <-time.After(20 * time.Second):
		t.Fatalf("event %d was not posted", held)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, stores[0].LeaderPID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "replica 1 leads", func() bool { return stores[1].LeaseLeft("duel") > 0 })
	release()
	feed(svcs[1], 2*held)

	// Every player matched: one event each.
	var head int64
	waitFor(t, 20*time.Second, "every player matched", func() bool {
		page, _ := stores[1].Events(ctx, "duel", 0, 0, false)
		head = page.Head
		return head == int64(players)
	})
	waitFor(t, 20*time.Second, "every event delivered", func() bool {
		cur, err := stores[1].WebhookCursor(ctx, "duel")
		return err == nil && cur == head
	})
	var want []string
	for seq := int64(1); seq <= head; seq++ {
		want = append(want, fmt.Sprintf("duel:%d", seq))
	}
	if got := rc.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("deliveries %v,\nwant each of 1..%d once, in order", got, head)
	}
}
