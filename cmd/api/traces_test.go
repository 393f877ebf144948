package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes each export request (protobuf) and
// keeps its spans.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
	exported chan struct{} // a value after each export
}

func newOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	rec := &otlpReceiver{exported: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			t.Errorf("OTLP receiver: %s %s (%s): %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err)
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		rec.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					rec.services = append(rec.services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				rec.spans = append(rec.spans, ss.Spans...)
			}
		}
		rec.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
		select {
		case rec.exported <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

// waitFor waits until found finds what it looks for in the spans received so far.
func (rec *otlpReceiver) waitFor(t *testing.T, what string, found func([]*tracepb.Span) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		rec.mu.Lock()
		ok := found(rec.spans)
		rec.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-rec.exported:
		case <-deadline:
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var names []string
			for _, s := range rec.spans {
				names = append(names, s.Name)
			}
			t.Fatalf("no %s among the %d spans received: %v", what, len(rec.spans), names)
		}
	}
}

func attr(s interface {
	GetAttributes() []*commonpb.KeyValue
}, key string) *commonpb.AnyValue {
	for _, a := range s.GetAttributes() {
		if a.Key == key {
			return a.Value
		}
	}
	return nil
}

func stringsOf(v *commonpb.AnyValue) []string {
	var out []string
	for _, x := range v.GetArrayValue().GetValues() {
		out = append(out, x.GetStringValue())
	}
	return out
}

// traceparentRecorder answers each signed POST 200 (with body, for an allocator) and
// keeps the trace ids of their traceparent headers.
type traceparentRecorder struct {
	mu     sync.Mutex
	traces map[string]bool
}

func (tr *traceparentRecorder) server(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		// traceparent: version-traceid-parentid-flags
		if parts := strings.Split(r.Header.Get("traceparent"), "-"); len(parts) == 4 {
			tr.mu.Lock()
			tr.traces[parts[1]] = true
			tr.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (tr *traceparentRecorder) saw(traceID []byte) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.traces[hex.EncodeToString(traceID)]
}

// TestTracesOfATicketFromCreationToMatch: the program with OTEL_EXPORTER_OTLP_ENDPOINT at an
// OTLP receiver of the test's. Two tickets of a 1v1 queue with a webhook and an allocator are
// created (the first under a caller's traceparent) and matched; the receiver gets: the
// creation's server span, named by its route, in the caller's trace and naming the ticket;
// the store call under it; the leader's tick span with the match naming both tickets; the
// placement's span and its client span, whose traceparent reached the allocator; and the
// ticket's webhook events' spans, whose traceparent reached the webhook receiver. On the
// in-memory stores and on Postgres.
func TestTracesOfATicketFromCreationToMatch(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		tracesOfATicket(t, map[string]string{}, "queue-memory")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		tracesOfATicket(t, map[string]string{"DATABASE_URL": dbtest.URL(t)}, "queue-postgres")
	})
}

func tracesOfATicket(t *testing.T, env map[string]string, store string) {
	rec, endpoint := newOTLPReceiver(t)
	hooks := &traceparentRecorder{traces: map[string]bool{}}
	allocs := &traceparentRecorder{traces: map[string]bool{}}
	webhook := hooks.server(t, `{}`)
	allocator := allocs.server(t, `{"connection":{"host":"10.0.0.7","port":7777}}`)
	env["MATCHMAKER_AUTH"], env["MATCHMAKER_WEBHOOK_ALLOW_CIDRS"] = "off", "127.0.0.0/8"
	env["OTEL_EXPORTER_OTLP_ENDPOINT"], env["OTEL_SERVICE_NAME"] = endpoint, "mm-test"
	p := startProgram(t, env)
	defer p.stop()

	call := func(method, path, body string, header ...string) map[string]any {
		req, _ := http.NewRequest(method, p.base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, b)
		}
		return out
	}
	call(http.MethodPut, "/v1/queues/duel", fmt.Sprintf(`{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,
		"webhook":{"url":%q,"secret":"0123456789abcdef"},"allocator":{"url":%q,"secret":"0123456789abcdef"}}`, webhook.URL, allocator.URL))
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	first := call(http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"alice","rating":1000}]}`,
		"traceparent", "00-"+callerTrace+"-00f067aa0ba902b7-01")["id"].(string)
	second := call(http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"bob","rating":1010}]}`)["id"].(string)

	var creation *tracepb.Span
	rec.waitFor(t, "span of the first ticket's creation", func(spans []*tracepb.Span) bool {
		for _, s := range spans {
			if s.Name == "POST /v1/queues/{name}/tickets" && attr(s, "matchmaker.ticket_id").GetStringValue() == first {
				creation = s
				return true
			}
		}
		return false
	})
	if got := hex.EncodeToString(creation.TraceId); got != callerTrace {
		t.Errorf("the creation's span is in trace %s, not the caller's %s", got, callerTrace)
	}
	if creation.Kind != tracepb.Span_SPAN_KIND_SERVER || attr(creation, "http.route").GetStringValue() != "/v1/queues/{name}/tickets" {
		t.Errorf("the creation's span: kind %v, http.route %v", creation.Kind, attr(creation, "http.route"))
	}
	rec.waitFor(t, "store create_ticket span under the creation's", func(spans []*tracepb.Span) bool {
		return slices.ContainsFunc(spans, func(s *tracepb.Span) bool {
			return s.Name == "store create_ticket" && bytes.Equal(s.ParentSpanId, creation.SpanId) &&
				attr(s, "matchmaker.store").GetStringValue() == store
		})
	})

	var matchID string
	rec.waitFor(t, "tick span with the match of both tickets", func(spans []*tracepb.Span) bool {
		for _, s := range spans {
			if s.Name != "queue tick" || attr(s, "matchmaker.queue").GetStringValue() != "duel" {
				continue
			}
			for _, e := range s.Events {
				if ids := stringsOf(attr(e, "matchmaker.ticket_ids")); e.Name == "match" && slices.Contains(ids, first) && slices.Contains(ids, second) {
					matchID = attr(e, "matchmaker.match_id").GetStringValue()
					return true
				}
			}
		}
		return false
	})
	rec.waitFor(t, "placement span, and its allocator call carrying its trace", func(spans []*tracepb.Span) bool {
		for _, a := range spans {
			if a.Name != "queue allocate" || attr(a, "matchmaker.match_id").GetStringValue() != matchID {
				continue
			}
			return allocs.saw(a.TraceId) && slices.ContainsFunc(spans, func(c *tracepb.Span) bool {
				return c.Name == "POST matchmaker-allocator" && c.Kind == tracepb.Span_SPAN_KIND_CLIENT && bytes.Equal(c.ParentSpanId, a.SpanId)
			})
		}
		return false
	})
	rec.waitFor(t, "webhook span of the first ticket's events, its trace at the receiver", func(spans []*tracepb.Span) bool {
		return slices.ContainsFunc(spans, func(s *tracepb.Span) bool {
			return s.Name == "queue webhook" && attr(s, "matchmaker.ticket_id").GetStringValue() == first && hooks.saw(s.TraceId)
		})
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.services) == 0 || rec.services[0] != "mm-test" {
		t.Errorf("service.name of the exports: %v, want mm-test (OTEL_SERVICE_NAME)", rec.services)
	}
}

// TestTracesOffWithoutAnEndpoint: without OTEL_EXPORTER_OTLP_ENDPOINT there is no tracer
// provider (the handler, stores and outbound client are not wrapped), and a malformed
// setting stops start-up naming it.
func TestTracesOffWithoutAnEndpoint(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.Tracing.On() {
		t.Fatalf("defaults: traces on %v, %v", cfg.Tracing.On(), err)
	}
	tp, stop, err := startTracing(cfg, nil)
	if tp != nil || err != nil {
		t.Fatalf("startTracing without an endpoint = %v, %v; want no provider", tp, err)
	}
	stop(context.Background())
	for name, value := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318",
		"OTEL_TRACES_SAMPLER_ARG":     "2",
		"OTEL_EXPORTER_OTLP_HEADERS":  "novalue",
	} {
		env := map[string]string{name: value, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
		if name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			env[name] = value
		}
		err := run(context.Background(), []string{"api"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: run = %v, want an error naming it", name, value, err)
		}
	}
}
