package queuesvc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// matchReads counts the store's reads of a match: whole, and its connection alone.
type matchReads struct {
	queue.Store
	whole, connection atomic.Int32
}

func (m *matchReads) GetMatch(ctx context.Context, id string) (queue.Match, error) {
	m.whole.Add(1)
	return m.Store.GetMatch(ctx, id)
}

func (m *matchReads) MatchConnection(ctx context.Context, id string) (json.RawMessage, error) {
	m.connection.Add(1)
	return m.Store.MatchConnection(ctx, id)
}

// reads is how many whole reads and connection reads fn made.
func (m *matchReads) reads(fn func()) (whole, connection int32) {
	w, c := m.whole.Load(), m.connection.Load()
	fn()
	return m.whole.Load() - w, m.connection.Load() - c
}

// replicas are n services (replicas) on one store, each with cfg, sharing clock; the store
// holds queue duel and a 1v1 match of alice and bob for each id of matches, made at the
// clock's time.
func replicas(t *testing.T, n int, cfg queuesvc.Config, matches ...string) (*matchReads, *queuetest.Clock, []*queuesvc.Service) {
	t.Helper()
	ctx := context.Background()
	store := &matchReads{Store: memstore.New()}
	c := newClock()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	var svcs []*queuesvc.Service
	for range n {
		svcs = append(svcs, queuesvc.New(queuesvc.Deps{Store: store, Ratings: rs, Matcher: pairInOrder{}, Config: cfg, Clock: c}))
	}
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize = "ctf", 1, 1
	if _, _, err := svcs[0].PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	for i, id := range matches {
		a := queue.Ticket{ID: fmt.Sprint("a", i), Queue: "duel", Status: queue.Searching, CreatedAt: c.Now(),
			ExpiresAt: c.Now().Add(time.Minute), Players: []queue.Player{{ID: "alice", Rating: 1000, Source: queue.RatingInline}}}
		b := a
		b.ID, b.Players = fmt.Sprint("b", i), []queue.Player{{ID: "bob", Rating: 1000, Source: queue.RatingInline}}
		for _, tk := range []queue.Ticket{a, b} {
			if _, _, err := store.CreateTicket(ctx, tk); err != nil {
				t.Fatal(err)
			}
		}
		m := queuetest.Match2v2(id, a, b)
		m.Queue, m.CreatedAt = "duel", c.Now()
		if _, err := queue.CommitTick(ctx, store, "duel", queue.TickWrite{At: c.Now(), Matches: []queue.Match{m}}); err != nil {
			t.Fatal(err)
		}
	}
	return store, c, svcs
}

// A replica reads a match whole once: a GET after it reads only its connection, and a result's
// check nothing (each was a database round trip of every match: docs/performance.md, "The
// request paths a ticket takes").
func TestAReplicaReadsAMatchOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _, svcs := replicas(t, 1, queuesvc.Config{}, "m1")
	svc := svcs[0]
	get := func() {
		t.Helper()
		if m, err := svc.GetMatch(ctx, "m1"); err != nil || m.ID != "m1" || len(m.Teams) != 2 || m.Teams[1].Players[0].ID != "bob" {
			t.Fatalf("GET: %+v %v", m, err)
		}
	}
	if w, c := store.reads(get); w != 1 || c != 0 {
		t.Fatalf("the first GET read the match %d times whole and its connection %d times, want 1, 0", w, c)
	}
	if w, c := store.reads(get); w != 0 || c != 1 {
		t.Fatalf("the second GET read the match %d times whole and its connection %d times, want 0, 1", w, c)
	}
	check := func() {
		t.Helper()
		if m, err := svc.CheckResult(ctx, "m1", "ctf", [][]string{{"alice"}, {"bob"}}); err != nil || m == nil || m.ID != "m1" {
			t.Fatalf("check: %+v %v", m, err)
		}
		_, err := svc.CheckResult(ctx, "m1", "ctf", [][]string{{"bob"}, {"alice"}})
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.Invalid || len(e.Fields) != 2 {
			t.Fatalf("a result with the teams swapped: %v", err)
		}
	}
	if w, c := store.reads(check); w != 0 || c != 0 {
		t.Fatalf("the result's checks read the match %d times whole and its connection %d times, want none", w, c)
	}
}

// A placement made on one replica is what a GET on another answers at once, though that one
// kept the match from before the placement; a match purged is NotFound on every replica.
func TestAMatchKeptIsAnsweredAsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, clock, svcs := replicas(t, 2, queuesvc.Config{Retention: 10 * time.Minute}, "m1")
	a, b := svcs[0], svcs[1]
	for _, svc := range svcs {
		if m, err := svc.GetMatch(ctx, "m1"); err != nil || m.Connection != nil {
			t.Fatalf("before the placement: %s %v", m.Connection, err)
		}
	}
	for i, conn := range []string{`{"address":"10.0.0.7"}`, `{"address":"10.0.0.8"}`} {
		placer := svcs[i%2]
		if _, err := placer.Place(ctx, "m1", json.RawMessage(conn)); err != nil {
			t.Fatal(err)
		}
		for j, svc := range []*queuesvc.Service{b, a} {
			if m, err := svc.GetMatch(ctx, "m1"); err != nil || string(m.Connection) != conn {
				t.Fatalf("placement %d, replica %d: %s %v, want %s", i, j, m.Connection, err, conn)
			}
		}
	}
	// Past the retention less the clocks' margin, the match is read from the store again.
	clock.Advance(9 * time.Minute)
	if w, _ := store.reads(func() {
		if _, err := a.CheckResult(ctx, "m1", "ctf", [][]string{{"alice"}, {"bob"}}); err != nil {
			t.Fatal(err)
		}
	}); w != 1 {
		t.Fatalf("a result of a match near the end of its retention read it %d times whole, want 1", w)
	}
	clock.Advance(time.Minute + time.Second)
	if _, err := store.Purge(ctx, clock.Now().Add(-10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for i, svc := range svcs {
		if _, err := svc.GetMatch(ctx, "m1"); apperr.CodeOf(err) != apperr.NotFound {
			t.Fatalf("replica %d, a purged match: %v", i, err)
		}
		if m, err := svc.CheckResult(ctx, "m1", "ctf", [][]string{{"bob"}, {"alice"}}); m != nil || err != nil {
			t.Fatalf("replica %d, a result of a purged match: %+v %v (as of a match the queue did not make)", i, m, err)
		}
	}
}

// The cache keeps at most Config.MatchCache matches, the oldest in going first; negative,
// none.
func TestTheMatchCacheIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _, svcs := replicas(t, 1, queuesvc.Config{MatchCache: 2}, "m1", "m2", "m3")
	svc := svcs[0]
	get := func(id string) func() {
		return func() {
			if _, err := svc.GetMatch(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		store.reads(get(id))
	}
	if n := queuesvc.MatchesKept(svc); n != 2 {
		t.Fatalf("%d matches kept, want 2", n)
	}
	for _, tc := range []struct {
		id    string
		whole int32
	}{{"m3", 0}, {"m2", 0}, {"m1", 1}, {"m2", 1}} { // m1 back in put m2 out
		if w, _ := store.reads(get(tc.id)); w != tc.whole {
			t.Fatalf("a GET of %s read it %d times whole, want %d", tc.id, w, tc.whole)
		}
	}
	store, _, svcs = replicas(t, 1, queuesvc.Config{MatchCache: -1}, "m1")
	for range 2 {
		if w, c := store.reads(func() { _, _ = svcs[0].GetMatch(ctx, "m1") }); w != 1 || c != 0 {
			t.Fatalf("without a cache, a GET read the match %d times whole and its connection %d times, want 1, 0", w, c)
		}
	}
}
