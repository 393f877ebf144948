package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	apiKeyKey           // the *APIKey that authenticated the request (its name, its game types)
)

// requestIDs makes ids unique across replicas (a random prefix per process) and cheap to
// generate (a counter), so tracing a request costs no syscall on the hot path.
type requestIDs struct {
	prefix string
	next   atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (ids *requestIDs) new() string {
	return ids.prefix + strconv.FormatUint(ids.next.Add(1), 10)
}

// validRequestID accepts a caller's id only if it is short printable ASCII, so logs and
// headers cannot be polluted through it.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// withRequestID takes X-Request-Id from the request or makes one, and echoes it.
func withRequestID(ids *requestIDs, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = ids.new()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// statusRecorder remembers the status a handler wrote, for metrics and logs.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status, s.wrote = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// withObservability records every request in the duration histogram under its chi route
// pattern (never the raw path, so the label set stays bounded), logs it at debug level, and
// turns a panic into a logged 500 problem.
func withObservability(logger *slog.Logger, m *httpMetrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		m.inFlight.Inc()
		defer m.inFlight.Dec() // also when the handler aborts with http.ErrAbortHandler
		defer func() {
			v := recover()
			if v != nil && v != http.ErrAbortHandler {
				logger.ErrorContext(r.Context(), "panic", "panic", v, "stack", string(debug.Stack()),
					"request_id", requestIDFrom(r.Context()))
				if !rec.wrote {
					writeError(rec, r, logger, apperr.New(apperr.Internal, "panic"))
				}
			}
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			elapsed := time.Since(start)
			m.observe(route, r.Method, rec.status, elapsed)
			if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
				span.SetName(r.Method + " " + route)
				span.SetAttributes(attribute.String("http.route", route))
			}
			if logger.Enabled(r.Context(), slog.LevelDebug) {
				logger.LogAttrs(r.Context(), slog.LevelDebug, "request",
					slog.String("request_id", requestIDFrom(r.Context())),
					slog.String("method", r.Method), slog.String("route", route),
					slog.Int("status", rec.status), slog.Duration("elapsed", elapsed))
			}
			if v == http.ErrAbortHandler {
				panic(v) // net/http's way to abort the response: pass it on
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// withBodyLimit caps every request body; decode turns the overflow into a 413 problem.
func withBodyLimit(logger *slog.Logger, limit int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			writeError(w, r, logger, &apperr.Error{Code: apperr.TooLarge,
				Message: "the body is larger than " + strconv.FormatInt(limit, 10) + " bytes",
				Fields:  []apperr.FieldError{{Field: "body", Message: "must be at most " + strconv.FormatInt(limit, 10) + " bytes"}}})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}
