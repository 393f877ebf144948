package outbound_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/outbound"
)

// TestTracedCarriesTheTraceToTheReceiver: a traced sender posts a webhook event and calls a
// match function each in a client span under the caller's span, and the receiver gets the
// caller's trace in traceparent.
func TestTracedCarriesTheTraceToTheReceiver(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var parents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		parents = append(parents, r.Header.Get("traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"matches":[]}`)
	}))
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := outbound.New(loopback, time.Second).Traced(tp)
	ctx, caller := tp.Tracer("test").Start(context.Background(), "tick")
	if err := h.PostEvent(ctx, queue.Webhook{URL: srv.URL, Secret: functionSecret}, queue.Event{Queue: "duel", Seq: 1, Type: "created"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	r, _ := functionCall()
	if _, err := h.CallFunction(ctx, queue.MatchFunction{URL: srv.URL, Secret: functionSecret, Timeout: time.Second}, r); err != nil {
		t.Fatal(err)
	}
	caller.End()
	trace := caller.SpanContext().TraceID().String()
	if len(parents) != 2 || !strings.Contains(parents[0], trace) || !strings.Contains(parents[1], trace) {
		t.Fatalf("traceparents %q, want both in trace %s", parents, trace)
	}
	var names []string
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == caller.SpanContext().SpanID() {
			names = append(names, s.Name())
		}
	}
	if strings.Join(names, ",") != "POST matchmaker-webhook,POST matchmaker-match-function" {
		t.Errorf("client spans under the caller's: %v", names)
	}
}
