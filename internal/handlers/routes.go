package handlers

import (
	"cmp"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/console"
)

// addRoutes is the one place that lists every route of the service; the /v1 routes are
// listed by topic in the functions below it, each guarded by its scope.
func addRoutes(r chi.Router, d Deps, metrics *domainMetrics) {
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, req, d.Logger, apperr.New(apperr.NotFound, "no route for %s %s", req.Method, req.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Allow", allowedMethods(r, req))
		writeError(w, req, d.Logger, apperr.New(apperr.NotAllowed, "%s is not allowed on %s", req.Method, req.URL.Path))
	})

	r.Method(http.MethodGet, "/healthz", handleHealthz(d.Logger))
	r.Method(http.MethodGet, "/readyz", handleReadyz(d.Logger, d.Ratings))
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{}))
	r.Method(http.MethodGet, "/openapi.yaml", handleOpenAPI())
	// The console is a static page: it holds no data, and asks the API with the key typed in it.
	r.Method(http.MethodGet, "/console", console.Handler())
	r.Method(http.MethodGet, "/console/*", console.Handler())

	g := newGuards(d)
	// One gate per server for the heavy team searches of /teams and /teams/rebalance.
	gate := newWorkGate(cmp.Or(d.Limits.HeavySearches, DefaultHeavySearches))
	gate.admission = newAdmitter(d.Limits.Admission, d.Limits.MaxBodyBytes)
	// Stalled uploads show as bodies arriving that do not go down.
	d.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "matchmaker_http_bodies_arriving",
		Help: "Admitted compute and ticket-creation requests whose bodies are still arriving.",
	}, gate.admission.arriving))
	r.Route("/v1", func(r chi.Router) {
		addTeamRoutes(r, d, g, metrics, gate)
		addRatingsRoutes(r, d, g, metrics)
		addQueueRoutes(r, d, g, gate)
		addAdminRoutes(r, d, g, metrics)
	})
}

// guards are the scopes' middlewares: the key first, then the key's rate limit.
type guards struct {
	read, match, results, admin func(http.Handler) http.Handler
	// readOrMatch lets a ticket be read with either scope: a game backend's match key, or the
	// read key of the console (and of anyone watching a queue); the rate limit is the scope's
	// that let it in.
	readOrMatch func(http.Handler) http.Handler
}

func newGuards(d Deps) guards {
	limits := newLimiter(d.RateLimits)
	failures := newFailedAuth(FailedAuthLimit, d.Logger)
	// The key first, then its rate limit, and what both add to the request's context in one
	// copy of the request.
	guard := func(scope Scope) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				ctx, ok := authorize(w, req, d.Auth, failures, scope, d)
				if ok {
					ctx, ok = limitRate(w, req, ctx, limits, scope, d)
				}
				if !ok {
					return
				}
				if ctx != req.Context() {
					req = req.WithContext(ctx)
				}
				next.ServeHTTP(w, req)
			})
		}
	}
	g := guards{read: guard(ScopeRead), match: guard(ScopeMatch), results: guard(ScopeResults), admin: guard(ScopeAdmin)}
	g.readOrMatch = func(next http.Handler) http.Handler {
		byMatch, byRead := g.match(next), g.read(next)
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if d.Auth.allows(req, ScopeMatch) {
				byMatch.ServeHTTP(w, req)
			} else {
				byRead.ServeHTTP(w, req)
			}
		})
	}
	return g
}

// addTeamRoutes lists the stateless searches: matches and teams from the ratings.
func addTeamRoutes(r chi.Router, d Deps, g guards, metrics *domainMetrics, gate *workGate) {
	r.With(g.match).Method(http.MethodPost, "/matchmake", handleMatchmake(d.Logger, d.Limits, d.Ratings, metrics, gate))
	r.With(g.match).Method(http.MethodPost, "/teams", handleTeams(d.Logger, d.Limits, d.Ratings, metrics, gate))
	r.With(g.match).Method(http.MethodPost, "/teams/assign", handleTeamsAssign(d.Logger, d.Limits, d.Ratings, metrics, gate))
	r.With(g.match).Method(http.MethodPost, "/teams/rebalance", handleTeamsRebalance(d.Logger, d.Limits, d.Ratings, metrics, gate))
	r.With(g.match).Method(http.MethodPost, "/teams/advantage", handleTeamsAdvantage(d.Logger, d.Limits, d.Ratings, metrics, gate))
}

// addRatingsRoutes lists results, predictions and the reads of ratings and seasons.
func addRatingsRoutes(r chi.Router, d Deps, g guards, metrics *domainMetrics) {
	r.With(g.results).Method(http.MethodPost, "/results", handleResults(d.Logger, d.Ratings, d.Queue, metrics))
	// The match scope, as /teams/advantage: game servers and matchmakers ask it about the
	// teams they propose; a dashboard's read key cannot run the model.
	r.With(g.match).Method(http.MethodPost, "/predict", handlePredict(d.Logger, d.Ratings))
	r.With(g.read).Method(http.MethodGet, "/players/{id}/ratings", handlePlayerRatings(d.Logger, d.Ratings))
	r.With(g.read).Method(http.MethodGet, "/ratings", handleBatchRatings(d.Logger, d.Ratings))
	r.With(g.read).Method(http.MethodGet, "/leaderboard", handleLeaderboard(d.Logger, d.Ratings))
	r.With(g.read).Method(http.MethodGet, "/bots/mean", handleBotMean(d.Logger, d.Ratings))
	r.With(g.read).Method(http.MethodGet, "/mutators", handleListMutators(d.Logger, d.Ratings))
	r.With(g.read).Method(http.MethodGet, "/seasons/{game_type}", handleListSeasons(d.Logger, d.Ratings))
	r.With(g.read).Method(http.MethodGet, "/seasons/{game_type}/{season}/tiers", handleTierDistribution(d.Logger, d.Ratings))
	r.With(g.read).Method(http.MethodGet, "/ratings/tune", handleTunings(d.Logger, d.Ratings))
	r.With(g.read).Method(http.MethodGet, "/players/{id}/seasons", handlePlayerSeasons(d.Logger, d.Ratings))
}

// addQueueRoutes lists the ticket queue's routes a game backend and a watcher use.
func addQueueRoutes(r chi.Router, d Deps, g guards, gate *workGate) {
	admitted := withAdmission(gate.admission, MaxTicketBodyBytes, d.Logger)
	r.With(g.match, admitted).Method(http.MethodPost, "/queues/{name}/tickets", handleCreateTicket(d.Logger, d.Queue))
	r.With(g.match, admitted).Method(http.MethodPost, "/queues/{name}/backfill", handleCreateBackfill(d.Logger, d.Queue))
	waits := newWaiters(d.Limits.Waiters)
	r.With(g.match).Method(http.MethodGet, "/queues/{name}/events", handleQueueEvents(d.Logger, d.Queue, d.Streams, waits))
	r.With(g.readOrMatch).Method(http.MethodGet, "/tickets/{id}", handleGetTicket(d.Logger, d.Queue, d.Streams, waits))
	r.With(g.match).Method(http.MethodDelete, "/tickets/{id}", handleCancelTicket(d.Logger, d.Queue))
	r.With(g.read).Method(http.MethodGet, "/matches/{id}", handleGetMatch(d.Logger, d.Queue))
	r.With(g.match).Method(http.MethodPost, "/matches/{id}/acceptance", handleAnswerProposal(d.Logger, d.Queue))
	r.With(g.match).Method(http.MethodPut, "/matches/{id}/placement", handlePlaceMatch(d.Logger, d.Queue))
	r.With(g.read).Method(http.MethodGet, "/queues/{name}/stats", handleQueueStats(d.Logger, d.Queue))
	r.With(g.read).Method(http.MethodGet, "/players/{id}/standing", handleGetStanding(d.Logger, d.Queue))
}

// addAdminRoutes lists the admin scope's routes: queues, mutators, rebuilds, tuning, seasons.
func addAdminRoutes(r chi.Router, d Deps, g guards, metrics *domainMetrics) {
	r.With(g.admin).Method(http.MethodGet, "/queues", handleListQueues(d.Logger, d.Queue))
	r.With(g.admin).Method(http.MethodPut, "/queues/{name}", handlePutQueue(d.Logger, d.Queue))
	r.With(g.admin).Method(http.MethodGet, "/queues/{name}", handleGetQueue(d.Logger, d.Queue))
	r.With(g.admin).Method(http.MethodDelete, "/queues/{name}", handleDeleteQueue(d.Logger, d.Queue))
	r.With(g.admin).Method(http.MethodPut, "/mutators/{name}", handleSetMutator(d.Logger, d.Ratings))
	r.With(g.admin).Method(http.MethodPost, "/ratings/rebuild", handleRebuild(d.Logger, d.Ratings))
	r.With(g.admin).Method(http.MethodDelete, "/results/{match_id}", handleDeleteResult(d.Logger, d.Ratings, metrics))
	r.With(g.admin).Method(http.MethodPost, "/ratings/tune", handleTune(d.Logger, d.Ratings))
	r.With(g.admin).Method(http.MethodPut, "/seasons/{game_type}/{season}", handlePutSeason(d.Logger, d.Ratings))
	r.With(g.admin).Method(http.MethodDelete, "/players/{id}/standing", handleClearStanding(d.Logger, d.Queue))
}
