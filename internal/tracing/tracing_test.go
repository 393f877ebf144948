package tracing_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/tracing"
)

func TestReadConfig(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     map[string]string
		on      bool
		url     string
		ratio   float64
		service string
		bad     string // what the error names
	}{
		{name: "nothing set: off", env: nil, ratio: 1, service: "matchmaker"},
		{name: "base endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, on: true, url: "http://c:4318/v1/traces", ratio: 1, service: "matchmaker"},
		{name: "traces endpoint wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t/x"}, on: true, url: "https://t/x", ratio: 1, service: "matchmaker"},
		{name: "service and ratio", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SERVICE_NAME": "mm", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, on: true, url: "http://c/v1/traces", ratio: 0.25, service: "mm"},
		{name: "not a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, bad: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "gRPC scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://c:4317"}, bad: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{name: "ratio above 1", env: map[string]string{"OTEL_TRACES_SAMPLER_ARG": "1.5"}, bad: "OTEL_TRACES_SAMPLER_ARG"},
		{name: "ratio not a number", env: map[string]string{"OTEL_TRACES_SAMPLER_ARG": "half"}, bad: "OTEL_TRACES_SAMPLER_ARG"},
		{name: "header without a value", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "api-key"}, bad: "OTEL_EXPORTER_OTLP_HEADERS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := tracing.ReadConfig(func(k string) string { return c.env[k] })
			if c.bad != "" {
				if err == nil || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("ReadConfig = %v, want an error naming %s", err, c.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.On() != c.on || (c.on && got.URL() != c.url) || got.SampleRatio != c.ratio || got.ServiceName != c.service {
				t.Errorf("ReadConfig = %+v (on %v, url %q)", got, got.On(), got.URL())
			}
		})
	}
}

// TestStoreSpans: a call under a span gets a child span named by its operation, failed only
// for the errors that say something is wrong (not a ticket not found); a call outside any
// span gets none.
func TestStoreSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	spans := tracing.StoreSpans(tp, "queue-postgres")

	_, end := spans(context.Background(), "get_ticket")
	end(nil)
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("a call outside any span made %d spans", n)
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	for _, err := range []error{nil, apperr.New(apperr.NotFound, "no such ticket"), apperr.Wrap(apperr.Unavailable, errors.New("refused"), "down")} {
		_, end := spans(ctx, "get_ticket")
		end(err)
	}
	parent.End()
	ended := rec.Ended()
	if len(ended) != 4 {
		t.Fatalf("%d spans, want 3 calls and their parent", len(ended))
	}
	wantStatus := []string{"Unset", "Unset", "Error"}
	for i, s := range ended[:3] {
		if s.Name() != "store get_ticket" || s.Parent().SpanID() != parent.SpanContext().SpanID() || s.Status().Code.String() != wantStatus[i] {
			t.Errorf("call %d: %s under %s, status %s; want store get_ticket under the request, %s",
				i, s.Name(), s.Parent().SpanID(), s.Status().Code, wantStatus[i])
		}
	}
}

// TestHandlerKeepsTheResponseController: under the server span the handler still reaches the
// connection (an event stream extends its write deadline per write, and flushes), and the
// caller's traceparent is continued.
func TestHandlerKeepsTheResponseController(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	srv := httptest.NewServer(tracing.Handler(tp, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Errorf("SetWriteDeadline through the span's writer: %v", err)
		}
		if err := rc.Flush(); err != nil {
			t.Errorf("Flush through the span's writer: %v", err)
		}
	})))
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.Close() // waits for the handler, and so for its span's end
	ended := rec.Ended()
	if len(ended) != 1 || ended[0].SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || ended[0].SpanKind().String() != "server" {
		t.Fatalf("spans %v, want one server span in the caller's trace", ended)
	}
}
