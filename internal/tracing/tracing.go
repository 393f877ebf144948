// Package tracing is the service's OpenTelemetry traces: the SDK's tracer provider exporting
// over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, none otherwise; the spans of store calls beside their metrics (StoreSpans); HTTP
// handlers and transports that carry the W3C trace context in and out (Handler, Transport).
// Nothing here is global: the provider is handed to each part that starts spans, so two
// servers in one process (the tests) keep their traces apart. internal/matchmaker and
// internal/ratings know nothing of it.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Scope is the instrumentation scope of the service's own spans.
const Scope = "github.com/matchmakerhq/matchmaker"

// Config is what the environment says of traces (the OpenTelemetry SDK's variables).
type Config struct {
	// Endpoint is OTEL_EXPORTER_OTLP_ENDPOINT, the collector's base URL (traces go to its
	// /v1/traces); TracesEndpoint, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the full URL, wins.
	// Both empty: no traces.
	Endpoint, TracesEndpoint string
	// Headers is OTEL_EXPORTER_OTLP_HEADERS: key=value,... sent with each export.
	Headers string
	// ServiceName is OTEL_SERVICE_NAME (default "matchmaker"); Instance names this replica
	// (service.instance.id).
	ServiceName, Instance string
	// SampleRatio is OTEL_TRACES_SAMPLER_ARG: the share of traces started here that are
	// recorded (1: all); a trace whose caller sampled it follows the caller's choice.
	SampleRatio float64
}

// ReadConfig reads the variables through getenv.
func ReadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		Endpoint:       getenv("OTEL_EXPORTER_OTLP_ENDPOINT"),
		TracesEndpoint: getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
		Headers:        getenv("OTEL_EXPORTER_OTLP_HEADERS"),
		ServiceName:    getenv("OTEL_SERVICE_NAME"),
		SampleRatio:    1,
	}
	if c.ServiceName == "" {
		c.ServiceName = "matchmaker"
	}
	if s := getenv("OTEL_TRACES_SAMPLER_ARG"); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r < 0 || r > 1 {
			return c, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, not %q", s)
		}
		c.SampleRatio = r
	}
	for _, u := range []string{c.Endpoint, c.TracesEndpoint} {
		if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return c, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be http:// or https:// URLs (OTLP over HTTP), not %q", u)
		}
	}
	if _, err := c.headers(); err != nil {
		return c, err
	}
	return c, nil
}

// On reports whether traces are exported.
func (c Config) On() bool { return c.Endpoint != "" || c.TracesEndpoint != "" }

// URL is where the spans are posted.
func (c Config) URL() string {
	if c.TracesEndpoint != "" {
		return c.TracesEndpoint
	}
	return strings.TrimSuffix(c.Endpoint, "/") + "/v1/traces"
}

func (c Config) headers() (map[string]string, error) {
	h := map[string]string{}
	for _, kv := range strings.Split(c.Headers, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs separated by commas, not %q", kv)
		}
		h[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return h, nil
}

// New is the tracer provider c asks for, and the function that flushes and stops it (within
// its context's deadline). Off, it is a provider that records nothing, at no cost.
func New(c Config) (trace.TracerProvider, func(context.Context) error, error) {
	if !c.On() {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	headers, err := c.headers()
	if err != nil {
		return nil, nil, err
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(c.URL()), otlptracehttp.WithHeaders(headers))
	if err != nil {
		return nil, nil, fmt.Errorf("traces: the OTLP exporter: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", c.ServiceName), attribute.String("service.instance.id", c.Instance))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))),
	)
	return tp, tp.Shutdown, nil
}

// propagator is the W3C trace context (traceparent, tracestate), read from requests and
// written into the outbound ones.
var propagator = propagation.TraceContext{}

// Handler wraps an HTTP handler in a server span per request, continuing the caller's trace
// (traceparent). The span is named by the method until the router renames it by the route
// (handlers' withObservability).
func Handler(tp trace.TracerProvider, h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "http", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
}

// Transport wraps an outbound transport in a client span per request, named by the
// request's User-Agent (matchmaker-webhook, matchmaker-allocator), and writes the trace
// context into its headers.
func Transport(tp trace.TracerProvider, rt http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.UserAgent() }))
}

// StoreSpans returns the function that starts the span of one store call (store is its
// Name: "postgres", "memory", "queue-postgres", ...), ended with the call's error. A call
// outside any span (a background poll) starts none: its spans would each be a trace of one.
func StoreSpans(tp trace.TracerProvider, store string) func(ctx context.Context, op string) (context.Context, func(error)) {
	tracer := tp.Tracer(Scope)
	system := attribute.String("matchmaker.store", store)
	return func(ctx context.Context, op string) (context.Context, func(error)) {
		if !trace.SpanFromContext(ctx).IsRecording() {
			return ctx, func(error) {}
		}
		ctx, span := tracer.Start(ctx, "store "+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(system))
		return ctx, func(err error) {
			if err != nil {
				code := apperr.CodeOf(err)
				span.SetAttributes(attribute.String("matchmaker.outcome", string(code)))
				if code == apperr.Internal || code == apperr.Unavailable { // not a ticket not found, a conflict
					span.SetStatus(codes.Error, err.Error())
				}
			}
			span.End()
		}
	}
}
