package queuesvc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/metrics"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuestats"
)

// Metrics are the queue's Prometheus metrics, labelled by queue name. Queue names are made by
// admins, so the label set is bounded; a deleted queue's series are removed. A nil *Metrics
// records nothing.
type Metrics struct {
	searching *prometheus.GaugeVec
	players   *prometheus.GaugeVec
	leader    *prometheus.GaugeVec
	leadingP  *prometheus.GaugeVec
	tick      *prometheus.HistogramVec
	matches   *prometheus.CounterVec
	created   *prometheus.CounterVec
	expired   *prometheus.CounterVec
	wait      *prometheus.HistogramVec
	quality   *prometheus.HistogramVec
	webhooks  *prometheus.CounterVec
	byBand    *prometheus.GaugeVec
	bandWait  *prometheus.HistogramVec
	backfills *prometheus.CounterVec
	joiners   *prometheus.CounterVec
	blocks    *prometheus.CounterVec
	proposals *prometheus.CounterVec
	placed    *prometheus.CounterVec
	placeTime *prometheus.HistogramVec
	refused   *prometheus.CounterVec
	penalties *prometheus.CounterVec
	elsewhere *prometheus.CounterVec
	conflicts *prometheus.CounterVec
	reads     *prometheus.CounterVec
	fn        *functionMetrics
}

// waitBuckets are seconds a ticket waited: from a tick to the longest TTL.
var waitBuckets = []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600}

// NewMetrics registers the queue's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	byQueue := []string{"queue"}
	m := &Metrics{
		searching: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "matchmaker_queue_searching_tickets",
			Help: "Tickets searching in the queue, as its leader saw them at its last tick."}, byQueue),
		players: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "matchmaker_queue_searching_players",
			Help: "Players in the queue's searching tickets, as its leader saw them at its last tick."}, byQueue),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "matchmaker_queue_leader",
			Help: "1 when this replica leads (ticks) the queue; a partitioned queue's: its webhook outbox (its partitions: matchmaker_queue_leading)."}, byQueue),
		leadingP: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "matchmaker_queue_leading",
			Help: "1 when this replica leads (ticks) the queue's partition (partition_by's value; \"\" for a queue without partition_by)."},
			[]string{"queue", "partition"}),
		tick: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "matchmaker_queue_tick_duration_seconds",
			Help: "Time of one tick: loading changes, the matching pass and the match write.", Buckets: metrics.LatencyBuckets}, byQueue),
		matches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_matches_total",
			Help: "Matches the queue made."}, byQueue),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_tickets_created_total",
			Help: "Tickets created in the queue (replays not counted)."}, byQueue),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_expired_tickets_total",
			Help: "Tickets that expired, by reason."}, []string{"queue", "reason"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "matchmaker_queue_wait_seconds",
			Help: "How long matched tickets waited.", Buckets: waitBuckets}, byQueue),
		quality: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "matchmaker_queue_match_average_difference",
			Help:    "Difference of the two teams' average ratings per match the queue made.",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 25, 50, 100, 250}}, byQueue),
		// Not by queue: /metrics is public, and a queue's failures beside its successes would
		// tell anyone which addresses the service can reach (a port scan through an admin
		// key's webhook URLs). The logs name the queue.
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_webhook_deliveries_total",
			Help: "Webhook deliveries of every queue, by outcome (delivered, failed, dead_letter: given up on)."}, []string{"outcome"}),
		byBand: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "matchmaker_queue_searching_players_by_band",
			Help: "Players in the queue's searching tickets by rating band (queue.Bands; backfills not included), as its leader counted them at its last stats snapshot."},
			[]string{"queue", "band"}),
		bandWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "matchmaker_queue_band_wait_seconds",
			Help: "How long matched tickets waited, by rating band (backfill tickets not included).", Buckets: waitBuckets},
			[]string{"queue", "band"}),
		backfills: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_backfills_total",
			Help: "Backfill tickets, by event: created, filled (players joined its match)."}, []string{"queue", "event"}),
		joiners: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_backfill_joiners_total",
			Help: "Players who joined running matches through backfill tickets."}, byQueue),
		blocks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_rule_blocks_total",
			Help: "Tickets a tick left waiting, by the rule that stopped them (interval, latency or the queue's rule's name): its rate is how many tickets each rule holds back per second of ticks."},
			[]string{"queue", "rule"}),
	}
	m.proposals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_proposals_total",
		Help: "Ready checks by outcome: proposed (made by a tick), accepted, declined (a player declined or a ticket was cancelled) or timed_out."},
		[]string{"queue", "outcome"})
	m.placed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_placements_total",
		Help: "Matches the queue's allocator placed (placed), or that went back to searching: failed (the allocator or the studio said so, or its deadline passed)."},
		[]string{"queue", "outcome"})
	m.placeTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "matchmaker_queue_placement_seconds",
		Help: "How long an allocator queue's placements took, from placing to the connection stored.", Buckets: waitBuckets},
		[]string{"queue"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_leader_takeover_refused_total",
		Help: "Attempts to take a queue from a leader whose lease ran out that failed because its database session could not be ended (the role lacks pg_signal_backend)."},
		[]string{"queue"})
	m.penalties = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_penalties_total",
		Help: "Penalties (penalties.go) by event: dodge (a player declined a ready check or let it time out), cooldown_refused (a ticket refused by a player's dodge cooldown), low_priority_sent (a player sent to the low-priority pool by his leaves), low_priority_game (a match played by a low-priority player)."},
		[]string{"queue", "event"})
	reg.MustRegister(m.penalties)
	m.elsewhere = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_matched_elsewhere_total",
		Help: "Tickets of the queue cancelled because their player was matched or proposed in another queue (reason matched_elsewhere)."},
		[]string{"queue"})
	m.conflicts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_claim_conflicts_total",
		Help: "Matches of the queue not made because a player's claim was live in another match."},
		[]string{"queue"})
	// Not by queue: a match's queue is known once it is read.
	m.reads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "matchmaker_queue_match_reads_total",
		Help: "Reads of a match for GET /v1/matches/{id} and a result's check, by source: cache (the replica kept the match; a GET still reads its connection from the store), store (read whole)."},
		[]string{"source"})
	m.fn = newFunctionMetrics()
	reg.MustRegister(m.fn.collectors()...)
	reg.MustRegister(m.searching, m.players, m.leader, m.leadingP, m.tick, m.matches, m.created, m.expired, m.wait, m.quality, m.webhooks,
		m.byBand, m.bandWait, m.backfills, m.joiners, m.blocks, m.proposals, m.placed, m.placeTime, m.refused,
		m.elsewhere, m.conflicts, m.reads)
	return m
}

func (m *Metrics) matchRead(source string) {
	if m != nil {
		m.reads.WithLabelValues(source).Inc()
	}
}

func (m *Metrics) ticketCreated(queue string) {
	if m != nil {
		m.created.WithLabelValues(queue).Inc()
	}
}

func (m *Metrics) backfillCreated(queue string) {
	if m != nil {
		m.backfills.WithLabelValues(queue, "created").Inc()
	}
}

// Bands sets the players searching per band from a stats snapshot.
func (m *Metrics) Bands(queue string, st *queue.Stats) {
	if m == nil {
		return
	}
	for _, b := range st.Bands {
		m.byBand.WithLabelValues(queue, b.Name).Set(float64(b.SearchingPlayers))
	}
}

// Waited records the waits of a match's tickets by band (backfills, band -1, are not).
func (m *Metrics) Waited(queueName string, samples []queuestats.WaitSample) {
	if m == nil {
		return
	}
	for _, w := range samples {
		if w.Band >= 0 {
			m.bandWait.WithLabelValues(queueName, queue.Bands[w.Band].Name).Observe(w.Seconds)
		}
	}
}

// TakeoverRefused counts a lead of queue the store refused to take over (queue.ErrTakeoverRefused).
func (m *Metrics) TakeoverRefused(queue string) {
	if m != nil {
		m.refused.WithLabelValues(queue).Inc()
	}
}

// Leading records whether the replica leads the queue.
func (m *Metrics) Leading(queue string, yes bool) {
	if m == nil {
		return
	}
	v := 0.0
	if yes {
		v = 1
	}
	m.leader.WithLabelValues(queue).Set(v)
}

// LeadingPartition records whether the replica leads the queue's partition.
func (m *Metrics) LeadingPartition(queue, partition string, yes bool) {
	if m == nil {
		return
	}
	v := 0.0
	if yes {
		v = 1
	}
	m.leadingP.WithLabelValues(queue, partition).Set(v)
}

// Ticked records one tick of a queue the replica leads.
func (m *Metrics) Ticked(queue string, elapsed time.Duration, searching, players int) {
	if m == nil {
		return
	}
	m.tick.WithLabelValues(queue).Observe(elapsed.Seconds())
	m.searching.WithLabelValues(queue).Set(float64(searching))
	m.players.WithLabelValues(queue).Set(float64(players))
}

// Matched records a match the replica committed, and its tickets' waits.
func (m *Metrics) Matched(queueName string, match queue.Match, waits []time.Duration) {
	if m == nil {
		return
	}
	if match.BackfillOf != "" { // a fill: not a match of the queue's own
		m.backfills.WithLabelValues(queueName, "filled").Inc()
		for _, t := range match.Teams {
			for _, p := range t.Players {
				if p.TicketID != match.BackfillTicket {
					m.joiners.WithLabelValues(queueName).Inc()
				}
			}
		}
		return
	}
	m.matches.WithLabelValues(queueName).Inc()
	m.quality.WithLabelValues(queueName).Observe(match.AverageDifference)
	m.penalty(queueName, "low_priority_game", queue.LowPriorityPlayers(match))
	for _, w := range waits {
		m.wait.WithLabelValues(queueName).Observe(w.Seconds())
	}
}

// RuleBlocks counts the tickets a tick left waiting by the rule that stopped them.
func (m *Metrics) RuleBlocks(queue string, waiting *queue.Waits) {
	if m == nil || waiting == nil {
		return
	}
	for rule, n := range waiting.ByRule() {
		m.blocks.WithLabelValues(queue, rule).Add(float64(n))
	}
}

// ExpiredTicket counts a ticket a tick expired, by reason.
func (m *Metrics) ExpiredTicket(queue, reason string) {
	if m != nil {
		m.expired.WithLabelValues(queue, reason).Inc()
	}
}

// Claims counts what a tick's commit did with claims: its matches refused for one, and the
// tickets it cancelled matched_elsewhere in each queue.
func (m *Metrics) Claims(queue string, done queue.TickCommitted) {
	if m == nil {
		return
	}
	if done.Claimed > 0 {
		m.conflicts.WithLabelValues(queue).Add(float64(done.Claimed))
	}
	for q, n := range done.Elsewhere {
		m.elsewhere.WithLabelValues(q).Add(float64(n))
	}
}

func (m *Metrics) webhook(outcome string) {
	if m == nil {
		return
	}
	m.webhooks.WithLabelValues(outcome).Inc()
}

// Forget removes a deleted queue's series.
func (m *Metrics) Forget(queue string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"queue": queue}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.searching, m.players, m.leader, m.leadingP, m.tick, m.matches, m.created, m.expired, m.wait, m.quality,
		m.byBand, m.bandWait, m.backfills, m.joiners, m.blocks, m.proposals, m.placed, m.placeTime, m.refused, m.penalties, m.fn.rejected,
		m.elsewhere, m.conflicts} {
		v.DeletePartialMatch(l)
	}
}

// Proposed counts a match the replica proposed to a ready check.
func (m *Metrics) Proposed(queue string) {
	if m != nil {
		m.proposals.WithLabelValues(queue, "proposed").Inc()
	}
}

func (m *Metrics) proposalResolved(queue string, state queue.ProposalState) {
	if m != nil {
		m.proposals.WithLabelValues(queue, string(state)).Inc()
	}
}

func (m *Metrics) placement(queue, outcome string) {
	if m != nil {
		m.placed.WithLabelValues(queue, outcome).Inc()
	}
}

func (m *Metrics) placementTook(queue string, d time.Duration) {
	if m != nil {
		m.placeTime.WithLabelValues(queue).Observe(max(d, 0).Seconds())
	}
}

// Waits observes a matched ticket's wait (one whose match a ready check or an allocator made).
func (m *Metrics) Waits(queue string, wait time.Duration) {
	if m != nil {
		m.wait.WithLabelValues(queue).Observe(wait.Seconds())
	}
}

// penalty counts n events of the queue's penalties.
func (m *Metrics) penalty(queue, event string, n int) {
	if m != nil && n > 0 {
		m.penalties.WithLabelValues(queue, event).Add(float64(n))
	}
}
