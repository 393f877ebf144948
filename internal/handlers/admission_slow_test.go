package handlers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// slowBodyServer is a server with three keys (slow and fast may match, ops is admin), the
// default limits but for a short admission wait, and a "duel" queue.
type slowBodyServer struct {
	url string
	reg *prometheus.Registry
}

func newSlowBodyServer(tb testing.TB, admission Admission) slowBodyServer {
	tb.Helper()
	keys, err := ParseAPIKeys("slow:match:" + HashKey("slow-key") + ",fast:match:" + HashKey("fast-key") + ",ops:admin:" + HashKey("ops-key"))
	if err != nil {
		tb.Fatal(err)
	}
	limits := DefaultLimits()
	limits.Admission = admission
	reg := prometheus.NewRegistry()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: pairTwo{}})
	srv := httptest.NewServer(NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Keys: keys}, Limits: limits, Registry: reg}))
	tb.Cleanup(srv.Close)
	s := slowBodyServer{url: srv.URL, reg: reg}
	if code := s.do(tb, "ops-key", http.MethodPut, "/v1/queues/duel", duelQueue); code != http.StatusCreated {
		tb.Fatalf("create the queue: %d", code)
	}
	return s
}

func (s slowBodyServer) do(tb testing.TB, key, method, path, body string) int {
	tb.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// stall opens n connections that each declare a body of declared bytes to path and send one
// byte of it, and waits until the server is answering all of them and has admitted them as
// arriving (in flight alone is counted before admission, so a request after stall could still
// find a slot).
func (s slowBodyServer) stall(tb testing.TB, n int, path string, declared int) []net.Conn {
	tb.Helper()
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer slow-key\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{",
			path, declared)
		conns = append(conns, c)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.inFlight(tb) < float64(n) || s.gauge(tb, "matchmaker_http_bodies_arriving") < float64(n) {
		if time.Now().After(deadline) {
			tb.Fatalf("the server never had the %d stalled requests in flight", n)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
	return conns
}

func (s slowBodyServer) inFlight(tb testing.TB) float64 {
	return s.gauge(tb, "matchmaker_http_requests_in_flight")
}

func (s slowBodyServer) gauge(tb testing.TB, name string) float64 {
	mfs, err := s.reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

const twoPlayerMatchmake = `{"team_size":1,"players":[{"id":"ann","rating":10},{"id":"bob","rating":12}]}`

// The attack: connections of one key declaring 8 MiB and sending one byte were each
// charged 96 MiB until the read timeout, so that another key's ticket creation and a 2-player
// matchmake answered 503 once the admission wait was over (here three fill a 288 MiB budget).
// Bodies are now charged by the bytes that arrived: the other key is answered as if nothing
// happened.
func TestSlowBodiesDoNotStarveAnotherKey(t *testing.T) {
	t.Parallel()
	s := newSlowBodyServer(t, Admission{Budget: 3 * 96 << 20, Wait: 300 * time.Millisecond})
	s.stall(t, 3, "/v1/matchmake", 8<<20)
	for i := range 3 {
		body := fmt.Sprintf(`{"players":[{"id":"p%d","rating":1}]}`, i)
		if code := s.do(t, "fast-key", http.MethodPost, "/v1/queues/duel/tickets", body); code != http.StatusCreated {
			t.Fatalf("ticket creation of another key during the attack: %d, want 201", code)
		}
	}
	if code := s.do(t, "fast-key", http.MethodPost, "/v1/matchmake", twoPlayerMatchmake); code != http.StatusOK {
		t.Fatalf("a 2-player matchmake of another key during the attack: %d, want 200", code)
	}
}

// A caller has at most PerCaller admitted requests in flight: one more is answered 429 at
// once; another key is not counted against it.
func TestAdmissionCapsRequestsInFlightPerKey(t *testing.T) {
	t.Parallel()
	s := newSlowBodyServer(t, Admission{Budget: 256 << 20, Wait: time.Second, PerCaller: 2})
	s.stall(t, 2, "/v1/queues/duel/tickets", 4096)
	if code := s.do(t, "slow-key", http.MethodPost, "/v1/matchmake", twoPlayerMatchmake); code != http.StatusTooManyRequests {
		t.Fatalf("a third request of the stalled key: %d, want 429", code)
	}
	if code := s.do(t, "fast-key", http.MethodPost, "/v1/matchmake", twoPlayerMatchmake); code != http.StatusOK {
		t.Fatalf("another key: %d, want 200", code)
	}
}

// A body that does not arrive within BodyTimeout is answered 400 naming the body, and its
// slot is free again.
func TestAdmissionBodyDeadline(t *testing.T) {
	t.Parallel()
	s := newSlowBodyServer(t, Admission{Budget: 256 << 20, Wait: time.Second, PerCaller: 1, BodyTimeout: 200 * time.Millisecond})
	conns := s.stall(t, 1, "/v1/queues/duel/tickets", 4096)
	resp, err := http.ReadResponse(bufio.NewReader(conns[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"field":"body"`) {
		t.Fatalf("a stalled body: %d %s, want 400 naming the body", resp.StatusCode, body)
	}
	if code := s.do(t, "slow-key", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"zed"}]}`); code != http.StatusCreated {
		t.Fatalf("the key's next request: %d, want 201 (its slot given back)", code)
	}
}

// A ticket creation declaring more than MaxTicketBodyBytes is refused before its body is read.
func TestTicketCreationBodyCap(t *testing.T) {
	t.Parallel()
	s := newSlowBodyServer(t, Admission{Budget: 256 << 20, Wait: time.Second})
	big := `{"players":[{"id":"ann"}],"latencies_ms":{"eu":1},"ttl_s":60` + strings.Repeat(" ", MaxTicketBodyBytes) + `}`
	if code := s.do(t, "fast-key", http.MethodPost, "/v1/queues/duel/tickets", big); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a %d-byte ticket: %d, want 413", len(big), code)
	}
}

// BenchmarkTicketCreationDuringSlowBodyAttack measures another key's ticket creations while
// three connections of one key hold stalled 8 MiB bodies; it reports the p99.
func BenchmarkTicketCreationDuringSlowBodyAttack(b *testing.B) {
	s := newSlowBodyServer(b, DefaultLimits().Admission)
	s.stall(b, 3, "/v1/matchmake", 8<<20)
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		body := fmt.Sprintf(`{"players":[{"id":"b%d","rating":1}],"ttl_s":60}`, i)
		if code := s.do(b, "fast-key", http.MethodPost, "/v1/queues/duel/tickets", body); code != http.StatusCreated {
			b.Fatalf("ticket creation: %d", code)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
