// Package handlers is the service's HTTP layer: routes, request and response types,
// validation of what arrives over the wire, problem+json errors, and the middleware for
// metrics, request ids and limits. The algorithms it calls know nothing of HTTP.
package handlers

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"matchmaker/internal/ratings"
)

// Limits bound what one request may ask of the service.
type Limits struct {
	MaxBodyBytes        int64 // request body size
	MaxMatchmakePlayers int   // players in one /v1/matchmake queue
	MaxTeamPlayers      int   // humans in one /v1/teams, /assign, /rebalance or /advantage request; 0 = 256, the most
}

// DefaultLimits are the documented defaults (README, "Configuration").
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:        8 << 20,
		MaxMatchmakePlayers: 100_000,
		MaxTeamPlayers:      256,
	}
}

// Deps is everything the HTTP layer needs from the outside.
type Deps struct {
	Logger   *slog.Logger
	Limits   Limits
	Registry *prometheus.Registry // metrics are registered here and served on /metrics
	// Store keeps ratings; nil means a fresh in-memory store. Wrap it with MeterStore to have
	// its calls timed.
	Store ratings.Store
	// Model learns ratings from results; nil means ratings.DefaultModel().
	Model ratings.Model
	// Auth says who may call what; nil means auth on with no keys configured.
	Auth *Auth
}

// NewServer builds the service's http.Handler.
func NewServer(d Deps) http.Handler {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if d.Limits == (Limits{}) {
		d.Limits = DefaultLimits()
	}
	if d.Auth == nil {
		d.Auth = &Auth{}
	}
	if d.Store == nil {
		d.Store = ratings.NewMemoryStore(nil)
	}
	if d.Model == nil {
		d.Model = ratings.DefaultModel()
	}
	metrics := newHTTPMetrics(d.Registry)
	domain := newDomainMetrics(d.Registry)
	ids := newRequestIDs()

	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler { return withRequestID(ids, next) })
	r.Use(func(next http.Handler) http.Handler { return withObservability(d.Logger, metrics, next) })
	r.Use(func(next http.Handler) http.Handler { return withBodyLimit(d.Logger, d.Limits.MaxBodyBytes, next) })
	addRoutes(r, d, domain)
	return r
}
