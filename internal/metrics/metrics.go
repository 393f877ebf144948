// Package metrics holds the Prometheus metrics that more than one part of the service records:
// the latency buckets every histogram shares, and the time of store calls, which HTTP
// requests, line-protocol commands and the ticket queue all cause. Each part registers its
// own metrics on the registry it is given; nothing here is global.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// LatencyBuckets are histogram buckets in seconds for work that usually takes well under a
// millisecond: Prometheus's defaults start at 5 ms and would put every request in one bucket.
var LatencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// StoreCalls times calls into the stores, by store, operation and outcome, so that a slow or
// failing database shows on the dashboard before the request latencies do.
type StoreCalls struct {
	duration *prometheus.HistogramVec
}

// NewStoreCalls registers matchmaker_store_query_duration_seconds on reg.
func NewStoreCalls(reg prometheus.Registerer) *StoreCalls {
	m := &StoreCalls{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "matchmaker_store_query_duration_seconds",
		Help:    "Time spent in a store per call, by store, operation and outcome (ok, or the error code).",
		Buckets: LatencyBuckets,
	}, []string{"store", "operation", "outcome"})}
	reg.MustRegister(m.duration)
	return m
}

// Observer returns the function that records the calls of one store (its Name: "memory",
// "postgres"); operation names come from a fixed list in the store's wrapper, never from input.
func (m *StoreCalls) Observer(store string) func(operation string, err error, elapsed time.Duration) {
	return func(operation string, err error, elapsed time.Duration) {
		outcome := "ok"
		if err != nil {
			outcome = string(apperr.CodeOf(err))
		}
		m.duration.WithLabelValues(store, operation, outcome).Observe(elapsed.Seconds())
	}
}
