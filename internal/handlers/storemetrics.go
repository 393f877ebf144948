package handlers

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"matchmaker/internal/apperr"
	"matchmaker/internal/ratings"
)

// meteredStore times every call into the rating store, by operation and by whether it
// failed, so a slow or failing database shows on the dashboard before the HTTP latencies do.
type meteredStore struct {
	ratings.Store
	duration *prometheus.HistogramVec
}

// MeterStore wraps store so that every call is timed in matchmaker_store_query_duration_seconds
// on reg. Wrap the store once and give the result to every server that reads it.
func MeterStore(store ratings.Store, reg prometheus.Registerer) ratings.Store {
	return newMeteredStore(store, reg)
}

func newMeteredStore(store ratings.Store, reg prometheus.Registerer) *meteredStore {
	m := &meteredStore{Store: store, duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "matchmaker_store_query_duration_seconds",
		Help:        "Time spent in the rating store per call, by operation and outcome (ok, or the error code).",
		Buckets:     LatencyBuckets,
		ConstLabels: prometheus.Labels{"store": store.Name()},
	}, []string{"operation", "outcome"})}
	reg.MustRegister(m.duration)
	return m
}

// time starts timing op; the returned function, deferred with the address of the named
// error result, records the call once its outcome is known.
func (m *meteredStore) time(op string) func(*error) {
	start := time.Now()
	return func(err *error) {
		outcome := "ok"
		if *err != nil {
			outcome = string(apperr.CodeOf(*err))
		}
		m.duration.WithLabelValues(op, outcome).Observe(time.Since(start).Seconds())
	}
}

func (m *meteredStore) RecordResult(ctx context.Context, req ratings.RecordRequest, apply ratings.ApplyFunc) (rec ratings.Recorded, err error) {
	defer m.time("record_result")(&err)
	return m.Store.RecordResult(ctx, req, apply)
}

func (m *meteredStore) Ratings(ctx context.Context, c ratings.Context, ps []ratings.Participant) (out map[ratings.Participant]ratings.Rating, err error) {
	defer m.time("ratings")(&err)
	return m.Store.Ratings(ctx, c, ps)
}

func (m *meteredStore) PlayerRatings(ctx context.Context, id string) (out []ratings.ContextRating, err error) {
	defer m.time("player_ratings")(&err)
	return m.Store.PlayerRatings(ctx, id)
}

func (m *meteredStore) Leaderboard(ctx context.Context, c ratings.Context, limit int) (out []ratings.RatedParticipant, err error) {
	defer m.time("leaderboard")(&err)
	return m.Store.Leaderboard(ctx, c, limit)
}

func (m *meteredStore) BotMean(ctx context.Context, c ratings.Context) (mean float64, count int, err error) {
	defer m.time("bot_mean")(&err)
	return m.Store.BotMean(ctx, c)
}

func (m *meteredStore) Policy(ctx context.Context) (p *ratings.MutatorPolicy, err error) {
	defer m.time("policy")(&err)
	return m.Store.Policy(ctx)
}

func (m *meteredStore) SetMutator(ctx context.Context, name string, affects bool) (info ratings.MutatorInfo, err error) {
	defer m.time("set_mutator")(&err)
	return m.Store.SetMutator(ctx, name, affects)
}

func (m *meteredStore) Rebuild(ctx context.Context, gameType string, replay ratings.ReplayFunc, progress func(ratings.Progress)) (r ratings.RebuildReport, err error) {
	defer m.time("rebuild")(&err)
	return m.Store.Rebuild(ctx, gameType, replay, progress)
}

func (m *meteredStore) Ping(ctx context.Context) (err error) {
	defer m.time("ping")(&err)
	return m.Store.Ping(ctx)
}
