package queue

import "github.com/prometheus/client_golang/prometheus"

// ProposalsCounter is m's matchmaker_queue_proposals_total, for tests.
func ProposalsCounter(m *Metrics) *prometheus.CounterVec { return m.proposals }
