package lineproto

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets are histogram buckets in seconds for commands that usually take a few
// microseconds on the in-memory store and a millisecond or so on Postgres: metrics.LatencyBuckets
// with two finer buckets below 50 µs.
var latencyBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
}

// Outcome of a command, as counted by the metrics.
type outcome uint8

const (
	outcomeOK      outcome = iota // answered (or, for GAME and MUTATOR, accepted)
	outcomeError                  // answered with an ERROR line: a bad line or the store failed
	outcomeUnknown                // PLAYER or BOT without a stored rating in the context
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "error", "unknown"}

// The command label: the six commands, and "invalid" for lines that are not one (unknown
// keyword, over-long line). A line with a known keyword and a bad argument counts against its
// command with outcome "error".
const kindInvalid = KindAuth + 1

func commandLabel(k Kind) string {
	if k == kindInvalid || k == KindNone {
		return "invalid"
	}
	return k.String()
}

// Metrics are the line protocol's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	commands    [kindInvalid + 1][numOutcomes]prometheus.Counter
	durations   [kindInvalid + 1]prometheus.Observer
	connections prometheus.Gauge
	rejected    prometheus.Counter
}

// NewMetrics registers the line protocol's metrics with reg:
//   - matchmaker_lineproto_commands_total{command, outcome}: command is GAME, MUTATOR, PLAYER,
//     BOT, MEANBOT, AUTH or invalid; outcome is ok, error or unknown (PLAYER or BOT with no rating
//     in the connection's context);
//   - matchmaker_lineproto_command_duration_seconds{command}: from the parsed line to the
//     reply in the write buffer (store reads included, network not);
//   - matchmaker_lineproto_connections: connections open now;
//   - matchmaker_lineproto_connections_rejected_total: connections refused by the cap.
//
// Every label value is created up front, so the series exist (at 0) before the first command.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	commands := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchmaker_lineproto_commands_total",
		Help: "Line-protocol commands handled, by command (or invalid) and outcome (ok, error, unknown).",
	}, []string{"command", "outcome"})
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "matchmaker_lineproto_command_duration_seconds",
		Help:    "Time to handle a line-protocol command, store reads included, by command.",
		Buckets: latencyBuckets,
	}, []string{"command"})
	m := &Metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matchmaker_lineproto_connections",
			Help: "Line-protocol connections open now.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchmaker_lineproto_connections_rejected_total",
			Help: "Line-protocol connections refused because MaxConns were open, or MaxConnsPerAddr from the client's address.",
		}),
	}
	for k := KindGame; k <= kindInvalid; k++ {
		label := commandLabel(k)
		m.durations[k] = durations.WithLabelValues(label)
		for o := range numOutcomes {
			m.commands[k][o] = commands.WithLabelValues(label, outcomeNames[o])
		}
	}
	reg.MustRegister(commands, durations, m.connections, m.rejected)
	return m
}

func (m *Metrics) command(k Kind, o outcome, elapsed time.Duration) {
	if m == nil {
		return
	}
	if k == KindNone || k > kindInvalid {
		k = kindInvalid
	}
	m.commands[k][o].Inc()
	if elapsed >= 0 { // an over-long line is counted, not timed
		m.durations[k].Observe(elapsed.Seconds())
	}
}

func (m *Metrics) connOpened() {
	if m != nil {
		m.connections.Inc()
	}
}

func (m *Metrics) connClosed() {
	if m != nil {
		m.connections.Dec()
	}
}

func (m *Metrics) connRejected() {
	if m != nil {
		m.rejected.Inc()
	}
}
