// Package handlers is the service's HTTP layer: routes, request and response types,
// validation of what arrives over the wire, problem+json errors, and the middleware for
// metrics, request ids and limits. The algorithms it calls know nothing of HTTP.
package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/tracing"
)

// Limits bound what one request may ask of the service.
type Limits struct {
	MaxBodyBytes        int64 // request body size
	MaxMatchmakePlayers int   // players in one /v1/matchmake queue
	MaxTeamPlayers      int   // humans in one /v1/teams, /assign, /rebalance or /advantage request; 0 = 256, the most
	// HeavySearches is how many heavy team searches (see teamSearchIsHeavy) may run at once;
	// each may hold ~38 MB of scratch. 0 = DefaultHeavySearches.
	HeavySearches int
	// Admission bounds the memory compute requests hold at once; the zero value admits all.
	Admission Admission
	// Waiters bounds the event streams and long-polls held open.
	Waiters WaitLimits
}

// DefaultHeavySearches is small on purpose: a container's memory limit, not the host's core
// count, is what bounds concurrent 38 MB searches.
const DefaultHeavySearches = 2

// DefaultLimits are the documented defaults (docs/operations.md, "Configuration").
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:        8 << 20,
		MaxMatchmakePlayers: 100_000,
		MaxTeamPlayers:      256,
		HeavySearches:       DefaultHeavySearches,
		Admission:           Admission{Budget: 256 << 20, Wait: 5 * time.Second},
		Waiters:             WaitLimits{PerReplica: DefaultWaitersPerReplica, PerCaller: DefaultWaitersPerCaller},
	}
}

// Deps is everything the HTTP layer needs from the outside.
type Deps struct {
	Logger   *slog.Logger
	Limits   Limits
	Registry *prometheus.Registry // metrics are registered here and served on /metrics
	// Ratings is the ratings service every rating endpoint and stored weight goes through; nil
	// means one over a fresh in-memory store with the default model.
	Ratings *ratings.Service
	// Queue is the ticket queue service; nil means one over a fresh in-memory store (its tick
	// loop is not run: whoever builds the server runs Queue.Run).
	Queue *queuesvc.Service
	// Streams ends the server's event streams and long-polls when it is cancelled (at the
	// start of a shutdown, which would otherwise wait for them); nil: they end with their
	// requests only.
	Streams context.Context
	// Auth says who may call what; nil means auth on with no keys configured.
	Auth *Auth
	// RateLimits bounds each caller's requests per route class; nil: no limits.
	RateLimits RateLimits
	// Tracer, if not nil, gives each request a server span (continuing the caller's
	// traceparent), named by its route.
	Tracer trace.TracerProvider
}

// NewServer builds the service's http.Handler.
func NewServer(d Deps) http.Handler {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	d.Logger = slog.New(newThrottledOutages(d.Logger.Handler()))
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if d.Limits == (Limits{}) {
		d.Limits = DefaultLimits()
	}
	if d.Auth == nil {
		d.Auth = &Auth{}
	}
	if d.Ratings == nil {
		d.Ratings = ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	}
	if d.Streams == nil {
		d.Streams = context.Background()
	}
	if d.Queue == nil {
		d.Queue = queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: d.Ratings, Logger: d.Logger})
	}
	metrics := newHTTPMetrics(d.Registry)
	domain := newDomainMetrics(d.Registry)
	ids := newRequestIDs()

	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler { return withRequestID(ids, next) })
	r.Use(func(next http.Handler) http.Handler { return withObservability(d.Logger, metrics, next) })
	r.Use(func(next http.Handler) http.Handler { return withBodyLimit(d.Logger, d.Limits.MaxBodyBytes, next) })
	addRoutes(r, d, domain)
	if d.Tracer != nil {
		return tracing.Handler(d.Tracer, r)
	}
	return r
}
