package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/matchmakerhq/matchmaker/internal/tracing"
)

// BenchmarkHandler is what a request's server span and one store call's span cost, with the
// SDK batching spans to an exporter that drops them (the export's network cost is the
// collector's, off the request path): "off" is the handler without the wrapper, as the
// service runs without an endpoint.
func BenchmarkHandler(b *testing.B) {
	spans := func(tp *sdktrace.TracerProvider) func(context.Context, string) (context.Context, func(error)) {
		if tp == nil {
			return func(ctx context.Context, _ string) (context.Context, func(error)) { return ctx, func(error) {} }
		}
		return tracing.StoreSpans(tp, "queue-postgres")
	}
	for _, on := range []bool{false, true} {
		var tp *sdktrace.TracerProvider
		if on {
			tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		}
		store := spans(tp)
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, end := store(r.Context(), "create_ticket")
			end(nil)
			w.WriteHeader(http.StatusCreated)
		})
		name := "off"
		if on {
			h, name = tracing.Handler(tp, h), "on"
		}
		b.Run(name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodPost, "/v1/queues/duel/tickets", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
