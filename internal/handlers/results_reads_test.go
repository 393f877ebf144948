package handlers

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
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
	qs := queue.NewService(queue.Deps{Store: store, Ratings: rs, Matcher: queue.TickPass{},
		Config: queue.Config{QueueRefresh: 20 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- qs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h := NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Off: true}})

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
