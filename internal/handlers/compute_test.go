package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

type panicRequest struct {
	Panic string `json:"panic"`
}

// A computation that panics gives its gate slot back (the slot is released by a defer), and
// the request is answered with a 500 problem; the next heavy request still gets the slot.
func TestAPanickingComputationGivesItsGateSlotBack(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	gate := newWorkGate(1)
	svc := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	h := handleCompute(logger, svc, gate, func(req *panicRequest) (computation, error) {
		return computation{
			heavy:   true,
			run:     func() error { panic(req.Panic) },
			observe: func(time.Duration) {},
			respond: func(http.ResponseWriter, *http.Request) {},
		}, nil
	})
	srv := withObservability(logger, newHTTPMetrics(prometheus.NewRegistry()), h)
	for range 3 {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"panic":"boom"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Header().Get("Content-Type"), "problem+json") {
			t.Fatalf("a panic answered %d %q, want a 500 problem", rec.Code, rec.Header().Get("Content-Type"))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	leave, err := gate.enter(ctx, true)
	if err != nil {
		t.Fatalf("the gate's only slot was lost to a panic: %v", err)
	}
	leave()
}

// The in-flight gauge goes back down however a handler ends: normally, with a panic, or by
// aborting the response with http.ErrAbortHandler (which the middleware passes on).
func TestRequestsInFlightReturnsToZero(t *testing.T) {
	t.Parallel()
	m := newHTTPMetrics(prometheus.NewRegistry())
	logger := slog.New(slog.DiscardHandler)
	for _, end := range []func(){func() {}, func() { panic("boom") }, func() { panic(http.ErrAbortHandler) }} {
		h := withObservability(logger, m, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { end() }))
		func() {
			defer func() { _ = recover() }() // what net/http does with ErrAbortHandler
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		}()
		var got dto.Metric
		if err := m.inFlight.Write(&got); err != nil {
			t.Fatal(err)
		}
		if got := got.GetGauge().GetValue(); got != 0 {
			t.Fatalf("requests in flight = %g after the handler ended", got)
		}
	}
}
