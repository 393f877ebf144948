package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// heldCreations is a store whose ticket creations wait until released, as they wait for a
// group commit behind a tick's write on Postgres: what keeps a busy key's creations in flight.
type heldCreations struct {
	*memstore.Store
	inside  atomic.Int64
	release chan struct{}
}

func (s *heldCreations) CreateTicket(ctx context.Context, t queue.Ticket) (queue.Ticket, bool, error) {
	s.inside.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return queue.Ticket{}, false, ctx.Err()
	}
	return s.Store.CreateTicket(ctx, t)
}

// oneKeyBurst sends n ticket creations of one key at once to a server with limits and rate
// limits, holds them all in the store until every one has either reached it or been answered,
// then lets them through; it returns the statuses counted and the detail of one 429.
func oneKeyBurst(t *testing.T, n int, limits Limits, rateLimits RateLimits) (map[int]int, string) {
	t.Helper()
	store := &heldCreations{Store: memstore.New(), release: make(chan struct{})}
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queue.NewService(queue.Deps{Store: store, Ratings: rs, Matcher: pairTwo{}})
	keys := []APIKey{{Name: "backend", Scopes: []Scope{ScopeAdmin, ScopeMatch}, Hash: sha256.Sum256([]byte("key-b"))}}
	srv := httptest.NewServer(NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Keys: keys}, Limits: limits, RateLimits: rateLimits}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}, Timeout: time.Minute}
	do := func(method, path, body string) (*http.Response, error) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer key-b")
		req.Header.Set("Content-Type", "application/json")
		return client.Do(req)
	}
	if resp, err := do(http.MethodPut, "/v1/queues/duel", duelQueue); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %v %v", resp, err)
	}
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		detail   string
		first429 *http.Response
		answered atomic.Int64
		wg       sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			defer answered.Add(1)
			resp, err := do(http.MethodPost, "/v1/queues/duel/tickets", fmt.Sprintf(`{"players":[{"id":"p%d","rating":1}]}`, i))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests && first429 == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body = io.NopCloser(bytes.NewReader(body))
				first429 = resp
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for store.inside.Load()+answered.Load() < int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s, %d creations in the store and %d answered of %d", store.inside.Load(), answered.Load(), n)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
	close(store.release)
	wg.Wait()
	if first429 != nil {
		validateResponse(t, first429.Request, first429)
		detail = readProblem(t, first429).Detail
	}
	return statuses, detail
}

// One backend key with 1,200 creations in flight at once on a replica (4,000 a second that
// each wait 300 ms behind a tick's write) is refused nothing with the default bounds, where
// the old ones (128 in flight, match 500/s with a burst of 1,000) answered 429s; each bound's
// 429 names the variable to raise.
func TestOneKeyAtAReplicasRateGetsNo429WithTheDefaults(t *testing.T) {
	const n = 1200
	statuses, detail := oneKeyBurst(t, n, DefaultLimits(), DefaultRateLimits())
	if statuses[http.StatusCreated] != n {
		t.Fatalf("defaults: %v, want %d created (a 429: %q)", statuses, n, detail)
	}

	old := DefaultLimits()
	old.Admission.PerCaller = 128
	statuses, detail = oneKeyBurst(t, n, old, nil)
	if statuses[http.StatusTooManyRequests] == 0 || !strings.Contains(detail, "MATCHMAKER_ADMISSION_PER_KEY") {
		t.Fatalf("the old 128 in flight: %v, 429 %q: want 429s naming MATCHMAKER_ADMISSION_PER_KEY", statuses, detail)
	}

	// The old burst, its refill slowed so that the count does not depend on the host's
	// speed (at 500 a second, a loaded host sending the 1,200 over a second refilled it).
	statuses, detail = oneKeyBurst(t, n, DefaultLimits(), RateLimits{ScopeMatch: {PerSecond: 0.01, Burst: 1000}})
	if statuses[http.StatusTooManyRequests] == 0 || !strings.Contains(detail, "MATCHMAKER_RATE_LIMITS") {
		t.Fatalf("the old match=500/s:1000: %v, 429 %q: want 429s naming MATCHMAKER_RATE_LIMITS", statuses, detail)
	}
}

// A key's bodies still arriving are capped apart from its requests in flight, at an eighth
// of the reading budget (128 with the default budget): past 128 stalled uploads, one more
// request of that key is a 429 naming the budget, while another key keeps its room.
func TestStalledUploadsOfOneKeyAreCappedApart(t *testing.T) {
	t.Parallel()
	s := newSlowBodyServer(t, DefaultLimits().Admission)
	s.stall(t, 128, "/v1/queues/duel/tickets", 4096)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/queues/duel/tickets", strings.NewReader(`{"players":[{"id":"x","rating":1}]}`))
	req.Header.Set("Authorization", "Bearer slow-key")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	validateResponse(t, req, resp)
	if p := readProblem(t, resp); resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(p.Detail, "MATCHMAKER_MEMORY_BUDGET") {
		t.Fatalf("the stalling key's 129th: %d %q, want 429 naming MATCHMAKER_MEMORY_BUDGET", resp.StatusCode, p.Detail)
	}
	if code := s.do(t, "fast-key", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"y","rating":1}]}`); code != http.StatusCreated {
		t.Fatalf("another key: %d, want 201", code)
	}
}
