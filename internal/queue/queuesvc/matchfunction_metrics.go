package queuesvc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/metrics"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queueleader"
)

// functionMetrics are the match functions' metrics: their calls by outcome and how long they
// took, not by queue (as webhook deliveries, and for their reason: a queue's failures beside
// its successes on a public /metrics would say which addresses the service reaches), and
// the proposals the check rejected, by queue and reason.
type functionMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	rejected *prometheus.CounterVec
}

// The outcomes of a match function's call.
const (
	callOK         = "ok"                    // a 2xx answer read
	callTimeout    = "timeout"               // no answer within timeout_ms
	callRefused    = "refused"               // an answer other than 2xx
	callUnreadable = "unreadable"            // a 2xx answer that cannot be read
	callError      = "error"                 // no answer: the connection failed, or the address is refused
	callBackoff    = queueleader.CallBackoff // not made: the function failed just before
	callSkipped    = queueleader.CallSkipped // not made: the shadow's last call is still running
)

func newFunctionMetrics() *functionMetrics {
	return &functionMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_match_function_calls_total",
			Help: "Calls of the queues' match functions by outcome: ok, timeout, refused (not a 2xx), unreadable (a 2xx that cannot be read), error (no answer), backoff (a tick's call skipped after failures), skipped (a shadow tick's call not made while the last one still runs)."},
			[]string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "matchmaker_queue_match_function_call_seconds",
			Help: "Time of the calls made of the queues' match functions, from the request to the answer read, by outcome.", Buckets: metrics.LatencyBuckets},
			[]string{"outcome"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_match_function_rejected_total",
			Help: "Matches a queue's match function proposed that the check rejected, by reason (unknown_ticket, not_searching, duplicate, party_split, teams, team_size, roles, composition, attributes, region, avoid, empty)."},
			[]string{"queue", "reason"}),
	}
}

func (f *functionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{f.calls, f.duration, f.rejected}
}

// FunctionCalled counts a match function's call (or one not made) by outcome, and times it.
func (m *Metrics) FunctionCalled(outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.fn.calls.WithLabelValues(outcome).Inc()
	if outcome != callBackoff && outcome != callSkipped {
		m.fn.duration.WithLabelValues(outcome).Observe(took.Seconds())
	}
}

// FunctionRejected counts the proposals a function's check rejected, by queue and reason.
func (m *Metrics) FunctionRejected(queue string, rejected []queue.Rejection) {
	if m == nil {
		return
	}
	for _, x := range rejected {
		m.fn.rejected.WithLabelValues(queue, string(x.Reason)).Inc()
	}
}
