package handlers

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// benchKey is the one API key of the request benchmarks, with every scope, as the soak's
// (docs/performance.md, "The throughput table") is.
const benchKey = "bench-key"

// benchServer is the server a replica runs, without the network: the router with auth on
// (one key), rate limits and the default limits, over the memory stores; the queue's tick
// loop is not run, so tickets stay searching.
func benchServer(b *testing.B) (http.Handler, *queuesvc.Service) {
	b.Helper()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: queue.TickPass{}})
	keys, err := ParseAPIKeys("bench:read+match+results+admin:" + HashKey(benchKey))
	if err != nil {
		b.Fatal(err)
	}
	// Every class limited, as by default, at rates a benchmark does not reach.
	limits := RateLimits{}
	for scope := range DefaultRateLimits() {
		limits[scope] = RateLimit{PerSecond: 1e9, Burst: 1e9}
	}
	h := NewServer(Deps{Logger: slog.New(slog.DiscardHandler), Ratings: rs, Queue: qs, Auth: &Auth{Keys: keys}, RateLimits: limits})
	benchDo(b, h, http.MethodPut, "/v1/queues/duel", `{"context":{"game_type":"soak"},"team_size":1,"tick_ms":100}`, http.StatusCreated)
	return h, qs
}

// benchDo sends one request as the soak's backends do and fails unless it is answered want.
func benchDo(b *testing.B, h http.Handler, method, path, body string, want int) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body) // a length, as the soak's []byte bodies have
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Authorization", "Bearer "+benchKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatalf("%s %s: %d, want %d: %s", method, path, rec.Code, want, rec.Body)
	}
	return rec
}

// BenchmarkCreateTicket is POST /v1/queues/{name}/tickets through the whole router (auth,
// rate limit, admission, decode, the service's creation on the memory store, encode): the
// soak's body, one player with a rating, a new player each time.
func BenchmarkCreateTicket(b *testing.B) {
	h, _ := benchServer(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		body := `{"players":[{"id":"p-` + strconv.Itoa(n) + `","rating":1012.5}]}`
		benchDo(b, h, http.MethodPost, "/v1/queues/duel/tickets", body, http.StatusCreated)
	}
}

// BenchmarkPostResults is POST /v1/results through the whole router: the soak's body, a 1v1
// of two of 1,000 players, a new match each time (not one the queue made: the queue's check
// finds no match and the result is the ratings' alone).
func BenchmarkPostResults(b *testing.B) {
	h, _ := benchServer(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		a, c := strconv.Itoa(n%1000), strconv.Itoa((n+500)%1000)
		body := `{"match_id":"mt-` + strconv.Itoa(n) + `","context":{"game_type":"soak"},"map":"soak-map","duration_s":600,` +
			`"teams":[{"side":"red","players":[{"id":"p-` + a + `"}]},{"side":"blue","players":[{"id":"p-` + c + `"}]}],"winner":` +
			strconv.Itoa(n%2) + `}`
		benchDo(b, h, http.MethodPost, "/v1/results", body, http.StatusCreated)
	}
}

// BenchmarkGetMatch is GET /v1/matches/{id} through the whole router, of a match the queue
// made (two tickets matched by one tick).
func BenchmarkGetMatch(b *testing.B) {
	h, qs := benchServer(b)
	rec := benchDo(b, h, http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"a","rating":1000}]}`, http.StatusCreated)
	var t ticketJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &t); err != nil {
		b.Fatal(err)
	}
	benchDo(b, h, http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"b","rating":1001}]}`, http.StatusCreated)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- qs.Run(ctx) }()
	rec = benchDo(b, h, http.MethodGet, "/v1/tickets/"+t.ID+"?wait_s=10&status=searching", "", http.StatusOK)
	cancel()
	<-done
	if err := json.Unmarshal(rec.Body.Bytes(), &t); err != nil || t.Assignment == nil {
		b.Fatalf("not matched: %v %s", err, rec.Body)
	}
	path := "/v1/matches/" + t.Assignment.MatchID
	b.ReportAllocs()
	for b.Loop() {
		benchDo(b, h, http.MethodGet, path, "", http.StatusOK)
	}
}
