package handlers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// matchReads counts the store's reads of a match.
type matchReads struct {
	queue.Store
	n atomic.Int32
}

func (m *matchReads) GetMatch(ctx context.Context, id string) (queue.Match, error) {
	m.n.Add(1)
	return m.Store.GetMatch(ctx, id)
}

// A result of a queue match reads the match once: for the roster's check, and the same for
// its players' claims and leaves (it was read twice, a database round trip more for every
// result: 2 before, 1 after).
func TestAResultReadsItsMatchOnce(t *testing.T) {
	t.Parallel()
	store := &matchReads{Store: memstore.New()}
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	h := storeServer(t, store, rs)

	a := duelOfAliceAndBob(t, h)
	body := fmt.Sprintf(`{"match_id":%q,"context":{"game_type":"ctf"},"map":"m","duration_s":600,"winner":0,`+
		`"teams":[{"side":"red","players":[{"id":%q}]},{"side":"blue","players":[{"id":%q}]}]}`,
		a.MatchID, a.Teams[0].Players[0], a.Teams[1].Players[0])
	before := store.n.Load()
	if resp := exchange(t, h, http.MethodPost, "/v1/results", "application/json", body); resp.StatusCode != http.StatusCreated {
		t.Fatalf("result: %d %s", resp.StatusCode, readAll(t, resp))
	}
	if n := store.n.Load() - before; n != 1 {
		t.Fatalf("the result read its match %d times, want 1", n)
	}
}

// claimsEnds keeps the durability of each end of claims that ended some.
type claimsEnds struct {
	queue.Store
	mu   sync.Mutex
	ends []bool
}

func (c *claimsEnds) EndClaims(ctx context.Context, match string, at time.Time, durable bool) (bool, error) {
	ended, err := c.Store.EndClaims(ctx, match, at, durable)
	c.mu.Lock()
	defer c.mu.Unlock()
	if ended || durable {
		c.ends = append(c.ends, durable)
	}
	return ended, err
}

func (c *claimsEnds) seen() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ends)
}

// resultCommits keeps, at each result's commit, the ends of claims made before it.
type resultCommits struct {
	ratings.Store
	claims *claimsEnds
	before [][]bool
}

func (r *resultCommits) RecordResult(ctx context.Context, req ratings.RecordRequest, apply ratings.ApplyFunc) (ratings.Recorded, error) {
	r.before = append(r.before, r.claims.seen())
	return r.Store.RecordResult(ctx, req, apply)
}

// A result's claims end, not durable, before the result's commit, whose synchronous flush
// makes them durable (they ended after it, each in a flush of its own); a replay, whose
// claims ended already, ends nothing and makes no durable end.
func TestAResultEndsItsClaimsBeforeItsCommit(t *testing.T) {
	t.Parallel()
	store := &claimsEnds{Store: memstore.New()}
	commits := &resultCommits{Store: ratings.NewMemoryStore(nil), claims: store}
	rs := ratings.NewService(commits, ratings.DefaultModel())
	h := storeServer(t, store, rs)

	post := func(a *ticketAssignedJSON) {
		t.Helper()
		body := fmt.Sprintf(`{"match_id":%q,"context":{"game_type":"ctf"},"map":"m","duration_s":600,"winner":0,`+
			`"teams":[{"side":"red","players":[{"id":%q}]},{"side":"blue","players":[{"id":%q}]}]}`,
			a.MatchID, a.Teams[0].Players[0], a.Teams[1].Players[0])
		if resp := exchange(t, h, http.MethodPost, "/v1/results", "application/json", body); resp.StatusCode != http.StatusCreated {
			t.Fatalf("result: %d %s", resp.StatusCode, readAll(t, resp))
		}
	}
	a := duelOfAliceAndBob(t, h)
	post(a)
	if got := commits.before; len(got) != 1 || !slices.Equal(got[0], []bool{false}) {
		t.Fatalf("claims ended before each result's commit (true: durable): %v, want one end, not durable", got)
	}
	if got := store.seen(); !slices.Equal(got, []bool{false}) {
		t.Fatalf("claims ended (true: durable): %v, want one end, not durable", got)
	}
	post(a) // a replay: its claims ended already
	if got := store.seen(); !slices.Equal(got, []bool{false}) {
		t.Fatalf("claims ended after a replay (true: durable): %v, want the first end only", got)
	}
}

// storeServer is a server of rs and a running queue service on store.
func storeServer(t *testing.T, store queue.Store, rs *ratings.Service) http.Handler {
	t.Helper()
	qs := queuesvc.New(queuesvc.Deps{Store: store, Ratings: rs, Matcher: queue.TickPass{},
		Config: queuesvc.Config{QueueRefresh: 20 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- qs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h := NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Off: true}})
	return h
}
