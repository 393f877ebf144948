package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// heldCreations is a store whose ticket creations wait until released, as they wait for a
// group commit behind a tick's write on Postgres: what keeps a busy key's creations in flight.
// reached, if set, is told each ticket's first player as its creation reaches the store.
type heldCreations struct {
	*memstore.Store
	release chan struct{}
	reached func(playerID string)
}

func (s *heldCreations) CreateTicket(ctx context.Context, t queue.Ticket) (queue.Ticket, bool, error) {
	if s.reached != nil {
		s.reached(t.Players[0].ID)
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return queue.Ticket{}, false, ctx.Err()
	}
	return s.Store.CreateTicket(ctx, t)
}

// burstArriving is how many of a burst's creations oneKeyBurst lets be on their way at once
// (sent, neither in the store nor answered): well under the 128 bodies of one caller the
// defaults let arrive at once. Sent all together, a starved server that had read the small
// bodies but not yet run the requests past their read counted hundreds of them as arriving
// and refused them, though the test is about the requests in flight.
const burstArriving = 32

// oneKeyBurst sends n ticket creations of one key, at most burstArriving of them on their
// way at once, to a server with limits and rate limits; it holds them all in the store until
// every one has either reached it or been answered, then lets them through; it returns the
// statuses counted and the detail of one 429.
func oneKeyBurst(t *testing.T, n int, limits Limits, rateLimits RateLimits) (map[int]int, string) {
	t.Helper()
	// onItsWay holds a slot of each creation sent until it has reached the store or been
	// answered, whichever comes first.
	onItsWay := make(chan struct{}, burstArriving)
	arrivals := make([]sync.Once, n)
	var settled sync.WaitGroup
	settled.Add(n)
	arrived := func(i int) { arrivals[i].Do(func() { <-onItsWay; settled.Done() }) }

	store := &heldCreations{Store: memstore.New(), release: make(chan struct{}),
		reached: func(id string) {
			if i, err := strconv.Atoi(strings.TrimPrefix(id, "p")); err == nil && i >= 0 && i < n {
				arrived(i)
			}
		}}
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: store, Ratings: rs, Matcher: pairTwo{}})
	keys := []APIKey{{Name: "backend", Scopes: []Scope{ScopeAdmin, ScopeMatch}, Hash: sha256.Sum256([]byte("key-b"))}}
	srv := httptest.NewServer(NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Keys: keys}, Limits: limits, RateLimits: rateLimits}))
	defer srv.Close()
	letThrough := sync.OnceFunc(func() { close(store.release) })
	defer letThrough() // before srv.Close, which waits for the held requests
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
		first429 *http.Response
		wg       sync.WaitGroup
	)
	deadline := time.After(time.Minute)
	for i := range n {
		select {
		case onItsWay <- struct{}{}:
		case <-deadline:
			t.Fatalf("after a minute, %d of %d creations sent, %d on their way", i, n, len(onItsWay))
		}
		wg.Go(func() {
			defer arrived(i)
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
	allSettled := make(chan struct{})
	go func() { settled.Wait(); close(allSettled) }()
	select {
	case <-allSettled:
	case <-deadline:
		t.Fatalf("after a minute, %d of %d creations neither in the store nor answered", len(onItsWay), n)
	}
	letThrough()
	wg.Wait()
	detail := ""
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
