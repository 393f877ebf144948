package handlers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
	"github.com/matchmakerhq/matchmaker/internal/metrics"
)

// domainMetrics describe what the service decided, beside how fast it answered: how long
// matchmaking took, how many matches it made and how fair they were. Label sets are bounded:
// endpoint and strategy come from fixed lists, never from input.
type domainMetrics struct {
	duration  *prometheus.HistogramVec
	matches   *prometheus.CounterVec
	unmatched *prometheus.CounterVec
	players   *prometheus.HistogramVec
	skillDiff *prometheus.HistogramVec
	pairDiff  *prometheus.HistogramVec

	ratingUpdates   prometheus.Counter
	results         *prometheus.CounterVec
	resultsDeleted  prometheus.Counter
	suspectedSmurfs prometheus.Counter
}

func newDomainMetrics(reg prometheus.Registerer) *domainMetrics {
	m := &domainMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "matchmaker_matchmaking_duration_seconds",
			Help:    "Time spent inside the matchmaking algorithms per request, by endpoint and strategy.",
			Buckets: metrics.LatencyBuckets,
		}, []string{"endpoint", "strategy"}),
		matches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchmaker_matches_total",
			Help: "Matches made by /v1/matchmake, by strategy.",
		}, []string{"strategy"}),
		unmatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchmaker_unmatched_players_total",
			Help: "Players /v1/matchmake returned unmatched, by strategy.",
		}, []string{"strategy"}),
		players: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "matchmaker_request_players",
			Help:    "Players per request, by endpoint.",
			Buckets: prometheus.ExponentialBuckets(2, 4, 9), // 2 .. 131072
		}, []string{"endpoint"}),
		skillDiff: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "matchmaker_match_average_difference",
			Help:    "Difference of the two team average ratings of each match made (the thesis's skill rating difference), by strategy.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250},
		}, []string{"strategy"}),
		pairDiff: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "matchmaker_pair_difference",
			Help:    "Rating difference of each opponent pair in the matches made, by strategy.",
			Buckets: []float64{0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500},
		}, []string{"strategy"}),
	}
	m.ratingUpdates = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "matchmaker_rating_updates_total",
		Help: "Participant ratings (players and bots) updated from match results.",
	})
	m.results = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchmaker_results_total",
		Help: "Match results received by /v1/results, by outcome: recorded, replayed (same match id and body) or rejected (4xx).",
	}, []string{"outcome"})
	for _, o := range []string{"recorded", "replayed", "rejected"} {
		m.results.WithLabelValues(o) // export zeros, so rates work from the first scrape
	}
	m.resultsDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "matchmaker_results_deleted_total",
		Help: "Match results an admin deleted (DELETE /v1/results/{match_id}), each followed by a rebuild of its game type.",
	})
	m.suspectedSmurfs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "matchmaker_ratings_suspected_smurfs_total",
		Help: "Newcomers a result made suspected smurfs (their first results say they are far better than rated), counted once each time one becomes so.",
	})
	reg.MustRegister(m.duration, m.matches, m.unmatched, m.players, m.skillDiff, m.pairDiff, m.ratingUpdates, m.results,
		m.resultsDeleted, m.suspectedSmurfs)
	return m
}

func (m *domainMetrics) observeMatchmaking(strategy pairing.Strategy, players int, result pairing.Result, elapsed time.Duration) {
	s := string(strategy)
	m.duration.WithLabelValues("matchmake", s).Observe(elapsed.Seconds())
	m.players.WithLabelValues("matchmake").Observe(float64(players))
	m.matches.WithLabelValues(s).Add(float64(len(result.Matches)))
	m.unmatched.WithLabelValues(s).Add(float64(len(result.Unmatched)))
	skill := m.skillDiff.WithLabelValues(s)
	pair := m.pairDiff.WithLabelValues(s)
	for _, match := range result.Matches {
		skill.Observe(match.AverageDifference)
		for _, p := range match.Pairs {
			pair.Observe(p.Difference)
		}
	}
}
