package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// summary is what a run measured. Latencies are in milliseconds.
type summary struct {
	Settings     settings      `json:"settings"`
	LoadAvgStart string        `json:"loadavg_start"` // the machine's 1-minute load average
	LoadAvgEnd   string        `json:"loadavg_end"`
	Interrupted  bool          `json:"interrupted"` // Ctrl-C: what was measured up to then
	Notes        []string      `json:"notes,omitempty"`
	Flood        *floodSummary `json:"flood,omitempty"` // -flood: the streams of one key
	// Partitions: -partitions, what the soak saw of them.
	Partitions *partitionSummary `json:"partitions,omitempty"`
	// -queues 2: the players across the two queues (exclusive.go).
	Exclusive *exclusiveSummary `json:"exclusive,omitempty"`

	// Arrivals and creations.
	ArrivalsS     float64 `json:"arrivals_s"` // how long arrivals were sent
	Due           int64   `json:"arrivals_due"`
	NotSent       int64   `json:"arrivals_not_sent"`  // -max-waiters tickets were in flight (being created or waiting)
	Abandoned     int64   `json:"arrivals_abandoned"` // sse: the ticket's stream did not open
	Created       int64   `json:"created"`
	CreatesPerS   float64 `json:"creates_per_s"`
	CreateLatency dist    `json:"create_latency_ms"` // from when each was due to its 201

	// Waiting and what the clients saw.
	PeakWaiting        int64            `json:"peak_waiting"`
	StillWaiting       int64            `json:"still_waiting_at_end"` // created, their end not seen when the run ended
	Outcomes           map[string]int64 `json:"outcomes"`             // tickets by the end a client saw
	Matches            int              `json:"matches_seen"`
	Results            map[string]int   `json:"results"` // matches by what became of their result
	ResultsPosted      int64            `json:"results_posted"`
	MatchToClient      dist             `json:"match_to_client_ms"`       // per ticket: match created_at -> its client saw it
	MatchToFirstClient dist             `json:"match_to_first_client_ms"` // per match: to the first of its clients
	RefFromMatch       int              `json:"reference_from_match"`     // tickets timed from GET /v1/matches/{id}'s created_at
	RefFromTicket      int              `json:"reference_from_ticket"`    // from the ticket's updated_at or the event's at (the match unread)
	RefMismatches      int              `json:"reference_mismatches"`     // tickets whose at differs from the match's created_at by > 1 ms
	// MatchToClientVia is MatchToClient by the replica of the shared stream (-backends) that
	// brought each ticket its end: the leader's streams against the others' is what the
	// notify path (NOTIFY, a replica's feed reading the events) costs a replica that does not
	// tick. Empty without -backends.
	MatchToClientVia []dist `json:"match_to_client_by_stream_replica_ms,omitempty"`

	// Requests and errors.
	Requests  map[string]int64            `json:"requests"`
	Errors    map[string]map[string]int64 `json:"errors"` // by endpoint, then status
	Errors5xx int64                       `json:"errors_5xx"`
	Cut       map[string]int64            `json:"cut,omitempty"`           // requests cut off by the run's end: not errors
	Details   map[string][]string         `json:"error_details,omitempty"` // by "endpoint status": the first distinct problem details

	// Creations answered an error, looked up in the database by their first player.
	FailedCreations      int              `json:"failed_creations"`
	FailedByStatus       map[string]int   `json:"failed_by_status,omitempty"`
	FailedStored         int              `json:"failed_stored"`
	FailedStoredByStatus map[string]int   `json:"failed_stored_by_status,omitempty"`
	FailedStoredExamples []storedTicket   `json:"failed_stored_examples,omitempty"`
	FailedCheckError     string           `json:"failed_check_error,omitempty"`
	DBTickets            map[string]int64 `json:"db_tickets"` // the queue's tickets by status (reason), as stored
	DBMatches            int64            `json:"db_matches"`

	// The database and the replicas, over the arrivals.
	DBConnectionsPeak   int64            `json:"db_connections_peak"`
	DBConnectionsMean   float64          `json:"db_connections_mean"`
	DBTransactionsPerS  float64          `json:"db_transactions_per_s"`
	DBTransactionsPeak  float64          `json:"db_transactions_per_s_peak"` // the busiest sampling period
	Ticks               float64          `json:"ticks"`
	TransactionsPerTick float64          `json:"db_transactions_per_tick"`
	ReplicaCPUSeconds   []float64        `json:"replica_cpu_s"`     // user + system during the arrivals
	SoakCPUSeconds      float64          `json:"soak_cpu_s"`        // the soak's own, during the arrivals
	DBCPUSeconds        float64          `json:"db_cpu_s"`          // the database's backends', during the arrivals; -1 unread
	Unscraped           int              `json:"unscraped_metrics"` // samples of a replica whose /metrics did not answer (within 3 s)
	Replicas            []replicaSummary `json:"replicas"`
	Timeline            []sample         `json:"timeline"`
}

type settings struct {
	Replicas   int             `json:"replicas"`
	Rate       float64         `json:"rate"`
	Duration   string          `json:"duration"`
	Drain      string          `json:"drain"`
	Wait       string          `json:"wait"`
	WaitS      int             `json:"wait_s,omitempty"`
	Backends   int             `json:"backends,omitempty"`
	MaxWaiters int             `json:"max_waiters"`
	Parties    float64         `json:"parties"`
	RatingSD   float64         `json:"rating_sd"`
	TeamSize   int             `json:"team_size"`
	TickMS     int             `json:"tick_ms"`
	Interval   json.RawMessage `json:"interval"`
	DBConns    int             `json:"db_max_conns"`
	Database   string          `json:"database"`
	FreshDB    bool            `json:"fresh_database"`
	Auth       string          `json:"auth"`
	Queue      string          `json:"queue"`
	Seed       uint64          `json:"seed"`
	CPUs       int             `json:"cpus"`
	Env        []string        `json:"env,omitempty"`
}

// dist is a distribution of durations, in milliseconds.
type dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func newDist(ds []time.Duration) dist {
	if len(ds) == 0 {
		return dist{}
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	q := func(p float64) float64 { return ms(ds[min(len(ds)-1, int(p*float64(len(ds))))]) }
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	return dist{N: len(ds), P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: ms(ds[len(ds)-1]), Mean: ms(total) / float64(len(ds))}
}

// summarize gathers the clients' counts, the latencies and the sampled figures.
func (l *load) summarize(sum summary, arrivals time.Duration) summary {
	c := l.c
	auth := "generated key"
	switch {
	case c.authOff:
		auth = "off"
	case len(l.keys) > 1:
		auth = fmt.Sprintf("%d generated keys (match+results) for the tickets, one for the queue and the matches' reads", len(l.keys))
	}
	sum.Settings = settings{Replicas: c.replicas, Rate: c.rate, Duration: c.duration.String(), Drain: c.drain.String(),
		Wait: l.waitMode(), Backends: c.backends, MaxWaiters: c.maxWaiters, Parties: c.parties, RatingSD: c.ratingSD,
		TeamSize: c.teamSize, TickMS: c.tickMS, Interval: json.RawMessage(c.interval), DBConns: c.dbConns, Database: l.db.name, FreshDB: l.db.fresh, Auth: auth, Queue: l.queue,
		Seed: c.seed, CPUs: runtime.NumCPU(), Env: c.env}
	if c.wait == "longpoll" {
		sum.Settings.WaitS = c.waitS
	}
	if !l.db.private {
		sum.Notes = append(sum.Notes, "the database is not a fresh one: its connections and transactions include other work on it")
	}
	sum.LoadAvgEnd = loadAvg()
	sum.ArrivalsS = arrivals.Seconds()
	sum.Due, sum.NotSent, sum.Abandoned, sum.Created = l.due.Load(), l.notSent.Load(), l.abandoned.Load(), l.created.Load()
	if arrivals > 0 {
		sum.CreatesPerS = float64(sum.Created) / arrivals.Seconds()
	}
	sum.PeakWaiting, sum.ResultsPosted, sum.Errors5xx = l.peakWaiting.Load(), l.posted.Load(), l.err5xx.Load()

	l.mu.Lock()
	sum.CreateLatency = newDist(slices.Clone(l.createLat))
	sum.Requests = maps.Clone(l.requests)
	sum.Errors = map[string]map[string]int64{}
	for k, v := range l.errs {
		sum.Errors[k] = maps.Clone(v)
	}
	sum.Cut = maps.Clone(l.cut)
	sum.Details = maps.Clone(l.details)
	sum.Outcomes = map[string]int64{}
	sum.Results = map[string]int{}
	sum.Matches = len(l.matches)
	for _, m := range l.matches {
		sum.Results[cmp.Or(m.result, "pending")]++
	}
	var perTicket []time.Duration
	var via [][]time.Duration // by the stream's replica
	first := map[string]time.Duration{}
	for _, o := range l.outcomes {
		sum.Outcomes[o.status]++
		if o.status != "matched" {
			continue
		}
		ref := o.at
		if m := l.matches[o.matchID]; m != nil && !m.createdAt.IsZero() {
			ref = m.createdAt
			sum.RefFromMatch++
			if d := o.at.Sub(m.createdAt); !o.at.IsZero() && (d > time.Millisecond || d < -time.Millisecond) {
				sum.RefMismatches++
			}
		} else {
			sum.RefFromTicket++
		}
		if ref.IsZero() {
			continue
		}
		d := o.seen.Sub(ref)
		perTicket = append(perTicket, d)
		if o.via > 0 {
			for len(via) < o.via {
				via = append(via, nil)
			}
			via[o.via-1] = append(via[o.via-1], d)
		}
		if f, ok := first[o.matchID]; !ok || d < f {
			first[o.matchID] = d
		}
	}
	for _, f := range l.failed {
		if sum.FailedByStatus == nil {
			sum.FailedByStatus = map[string]int{}
		}
		sum.FailedByStatus[f.status]++
	}
	sum.FailedCreations = len(l.failed)
	sum.StillWaiting = sum.Created - int64(len(l.outcomes)) // created, and no end seen
	l.mu.Unlock()
	sum.MatchToClient = newDist(perTicket)
	sum.MatchToFirstClient = newDist(slices.Collect(maps.Values(first)))
	for _, v := range via {
		sum.MatchToClientVia = append(sum.MatchToClientVia, newDist(v))
	}

	sum.Timeline = l.sampler.all()
	l.windowStats(&sum)
	return sum
}

// windowStats derives the database's and the replicas' figures over the arrivals, from the
// samples marked start and arrivals end.
func (l *load) windowStats(sum *summary) {
	tl := sum.Timeline
	from := slices.IndexFunc(tl, func(s sample) bool { return s.Mark == "start" })
	to := slices.IndexFunc(tl, func(s sample) bool { return s.Mark == "arrivals end" })
	if from < 0 || to <= from {
		return
	}
	a, b := tl[from], tl[to]
	if dt := b.T - a.T; dt > 0 && a.DB.Transactions >= 0 && b.DB.Transactions >= 0 {
		sum.DBTransactionsPerS = float64(b.DB.Transactions-a.DB.Transactions) / dt
		sum.Ticks = b.Ticks - a.Ticks
		if sum.Ticks > 0 {
			sum.TransactionsPerTick = float64(b.DB.Transactions-a.DB.Transactions) / sum.Ticks
		}
	}
	var conns, n int64
	for i := from; i <= to; i++ {
		s := tl[i]
		if s.DB.Connections >= 0 {
			conns += s.DB.Connections
			n++
		}
		if i > from && s.DB.Transactions >= 0 && tl[i-1].DB.Transactions >= 0 && s.T > tl[i-1].T {
			sum.DBTransactionsPeak = max(sum.DBTransactionsPeak, float64(s.DB.Transactions-tl[i-1].DB.Transactions)/(s.T-tl[i-1].T))
		}
	}
	for _, s := range tl {
		sum.DBConnectionsPeak = max(sum.DBConnectionsPeak, s.DB.Connections)
	}
	if n > 0 {
		sum.DBConnectionsMean = float64(conns) / float64(n)
	}
	sum.SoakCPUSeconds = b.SoakCPU - a.SoakCPU
	sum.DBCPUSeconds = -1
	if a.DB.CPU >= 0 && b.DB.CPU >= 0 {
		sum.DBCPUSeconds = b.DB.CPU - a.DB.CPU
	}
	for _, s := range tl {
		sum.Unscraped += s.Unscraped
	}
	for i := range a.Replicas {
		cpu := -1.0
		if a.Replicas[i].CPUSeconds >= 0 && b.Replicas[i].CPUSeconds >= 0 {
			cpu = b.Replicas[i].CPUSeconds - a.Replicas[i].CPUSeconds
		}
		sum.ReplicaCPUSeconds = append(sum.ReplicaCPUSeconds, cpu)
	}
}

// checkDatabase looks up, in the database, the tickets whose creation answered an error
// (by their first player: the service gave them no id), and counts the queue's tickets and
// matches as stored.
func (l *load) checkDatabase(logf func(string, ...any), sum *summary) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l.mu.Lock()
	players := make([]string, len(l.failed))
	got := make(map[string]string, len(l.failed)) // first player -> what the client got
	for i, f := range l.failed {
		players[i] = f.player
		got[f.player] = f.status
	}
	l.mu.Unlock()
	if len(players) > 0 {
		stored, err := l.db.ticketsOf(ctx, l.queue, players)
		if err != nil {
			sum.FailedCheckError = err.Error()
			logf("looking up the failed creations: %v", err)
		}
		sum.FailedStored = len(stored)
		for _, t := range stored {
			if sum.FailedStoredByStatus == nil {
				sum.FailedStoredByStatus = map[string]int{}
			}
			k := got[t.Player] + " -> " + t.Status
			if t.Reason != "" {
				k += " (" + t.Reason + ")"
			}
			sum.FailedStoredByStatus[k]++
			if len(sum.FailedStoredExamples) < 5 {
				sum.FailedStoredExamples = append(sum.FailedStoredExamples, t)
			}
		}
	}
	counts, matches, err := l.db.queueCounts(ctx, l.queue)
	if err != nil {
		logf("counting the queue's tickets: %v", err)
	}
	sum.DBTickets, sum.DBMatches = counts, matches
}

func printJSON(w io.Writer, sum *summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sum)
}

// printTable prints the summary for people.
func printTable(w io.Writer, s *summary) {
	st := s.Settings
	fmt.Fprintf(w, "\n== soak summary%s\n", map[bool]string{true: " (INTERRUPTED: figures up to Ctrl-C)", false: ""}[s.Interrupted])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, a...)) }
	row("setup", "%d replicas, %.0f arrivals/s for %s (drain %s), %.0f%% parties of 2-5, ratings sd %.0f, %dv%d, tick %d ms, interval %s",
		st.Replicas, st.Rate, st.Duration, st.Drain, 100*st.Parties, st.RatingSD, st.TeamSize, st.TeamSize, st.TickMS, st.Interval)
	row("", "wait %s, at most %d waiting; pool %d/replica; database %s%s; auth %s; %d CPUs; load average %s -> %s",
		st.Wait, st.MaxWaiters, st.DBConns, st.Database, map[bool]string{true: " (fresh)", false: ""}[st.FreshDB], st.Auth,
		st.CPUs, s.LoadAvgStart, s.LoadAvgEnd)
	if len(st.Env) > 0 {
		row("", "replica env: %s", strings.Join(st.Env, " "))
	}
	if s.Partitions != nil {
		row("partitions", "%s", partitionsRow(s.Partitions))
	}
	if s.Exclusive != nil {
		row("two queues", "%s", s.Exclusive)
	}
	row("arrivals", "%d due in %.1f s; not sent (-max-waiters tickets in flight): %d; abandoned (their stream did not open): %d",
		s.Due, s.ArrivalsS, s.NotSent, s.Abandoned)
	row("creations", "%d answered 201 = %.1f/s; latency from due: %s", s.Created, s.CreatesPerS, s.CreateLatency)
	row("waiting", "peak %d tickets at once; still waiting when the run ended: %d", s.PeakWaiting, s.StillWaiting)
	row("ends seen", "%s", countsString(s.Outcomes))
	row("match -> client", "%s (every ticket; %d timed from GET /v1/matches created_at, %d from the ticket/event; %d differ by > 1 ms)",
		s.MatchToClient, s.RefFromMatch, s.RefFromTicket, s.RefMismatches)
	row("match -> 1st client", "%s (per match)", s.MatchToFirstClient)
	for i, d := range s.MatchToClientVia {
		row(fmt.Sprintf("  via replica %d", i), "%s (the tickets whose backend's stream is on replica %d)", d, i)
	}
	row("results", "%d matches seen, %d results posted; %s", s.Matches, s.ResultsPosted, countsString(s.Results))
	row("requests", "%s", countsString(s.Requests))
	errs := []string{}
	for _, ep := range slices.Sorted(maps.Keys(s.Errors)) {
		errs = append(errs, ep+" "+countsString(s.Errors[ep]))
	}
	if len(errs) == 0 {
		errs = append(errs, "none")
	}
	row("errors", "%s; 5xx in all: %d", strings.Join(errs, "; "), s.Errors5xx)
	for _, k := range slices.Sorted(maps.Keys(s.Details)) {
		row("", "%s: %q", k, s.Details[k])
	}
	if len(s.Cut) > 0 {
		row("", "cut off by the run's end (not errors): %s", countsString(s.Cut))
	}
	failed := fmt.Sprintf("%d answered an error or none", s.FailedCreations)
	if s.FailedCreations > 0 {
		failed += fmt.Sprintf(" (%s); stored anyway: %d", countsString(s.FailedByStatus), s.FailedStored)
		if s.FailedStored > 0 {
			failed += " (" + countsString(s.FailedStoredByStatus) + ")"
		}
		if s.FailedCheckError != "" {
			failed += "; the check failed: " + s.FailedCheckError
		}
	}
	row("failed creations", "%s", failed)
	row("stored", "tickets %s; matches %d", countsString(s.DBTickets), s.DBMatches)
	row("database", "connections peak %d, mean %.1f; transactions %.0f/s (peak %.0f/s); %.0f ticks, %.1f transactions per tick",
		s.DBConnectionsPeak, s.DBConnectionsMean, s.DBTransactionsPerS, s.DBTransactionsPeak, s.Ticks, s.TransactionsPerTick)
	for i, r := range s.Replicas {
		cpu := ""
		if i < len(s.ReplicaCPUSeconds) && s.ReplicaCPUSeconds[i] >= 0 {
			cpu = fmt.Sprintf("; CPU %.1f s during the arrivals", s.ReplicaCPUSeconds[i])
		}
		row(fmt.Sprintf("replica %d", i), "RSS %.0f -> peak %.0f -> end %.0f MiB; goroutines %d -> peak %d -> end %d%s",
			r.RSSStartMiB, r.RSSPeakMiB, r.RSSEndMiB, r.GoroutinesStart, r.GoroutinesPeak, r.GoroutinesEnd, cpu)
		if r.ExitedEarly != "" {
			row("", "EXITED during the run: %s", r.ExitedEarly)
		}
		if len(r.Warnings) > 0 {
			row("", "log: %s", topCounts(r.Warnings, 4))
		}
	}
	if s.Flood != nil {
		row("flood", "%s", s.Flood)
	}
	row("soak itself", "CPU %.1f s during the arrivals; /metrics unanswered in %d replica samples", s.SoakCPUSeconds, s.Unscraped)
	if line := cpuPerTicket(*s); line != "" {
		row("CPU per ticket", "%s", line)
	}
	for _, n := range s.Notes {
		row("note", "%s", n)
	}
	_ = tw.Flush()
	printTimeline(w, s.Timeline)
}

// printTimeline prints the samples, at most about 24 rows: the rates are over each row's span.
func printTimeline(w io.Writer, tl []sample) {
	if len(tl) < 2 {
		return
	}
	step := max(1, (len(tl)+23)/24)
	fmt.Fprintln(w, "\ntimeline (rates over each row's span; waiting, searching, connections, RSS and goroutines at its end; * leads)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "t s\tcreates/s\tends/s\twaiting\tsearching\terrors\t5xx\tconns\txact/s\tticks\txact/tick\t")
	for i := range tl[0].Replicas {
		fmt.Fprintf(tw, "r%d MiB\tr%d gor\t", i, i)
	}
	fmt.Fprintln(tw, "")
	prev := tl[0]
	for i := 1; i < len(tl); i++ {
		cur := tl[i]
		if (i%step != 0 && i != len(tl)-1 && cur.Mark == "") || cur.T <= prev.T {
			continue
		}
		dt := cur.T - prev.T
		xact, perTick := "-", "-"
		if cur.DB.Transactions >= 0 && prev.DB.Transactions >= 0 {
			x := float64(cur.DB.Transactions - prev.DB.Transactions)
			xact = fmt.Sprintf("%.0f", x/dt)
			if t := cur.Ticks - prev.Ticks; t > 0 {
				perTick = fmt.Sprintf("%.0f", x/t)
			}
		}
		fmt.Fprintf(tw, "%.0f\t%.0f\t%.0f\t%d\t%.0f\t%d\t%d\t%d\t%s\t%.0f\t%s\t", cur.T,
			float64(cur.Created-prev.Created)/dt, float64(cur.Ended-prev.Ended)/dt, cur.Waiting, cur.Searching,
			cur.Errors-prev.Errors, cur.Errors5xx-prev.Errors5xx, cur.DB.Connections, xact, cur.Ticks-prev.Ticks, perTick)
		for _, r := range cur.Replicas {
			lead := ""
			if r.Leader {
				lead = "*"
			}
			fmt.Fprintf(tw, "%.0f%s\t%d\t", float64(r.RSSKiB)/1024, lead, r.Goroutines)
		}
		fmt.Fprintln(tw, "")
		prev = cur
	}
	_ = tw.Flush()
}

func (d dist) String() string {
	if d.N == 0 {
		return "none measured"
	}
	return fmt.Sprintf("p50 %s p90 %s p99 %s max %s (n %d)", ms(d.P50), ms(d.P90), ms(d.P99), ms(d.Max), d.N)
}

func ms(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.1f ms", v)
	}
}

// countsString is "k1 n1, k2 n2" in the order of the keys.
func countsString[N int | int64](m map[string]N) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// topCounts is the n largest counts, largest first.
func topCounts(m map[string]int, n int) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	var parts []string
	for i, k := range keys {
		if i == n {
			parts = append(parts, fmt.Sprintf("... %d kinds more", len(keys)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%q x%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// cpuPerTicket is the CPU of the arrivals' window divided by the tickets created: the
// replicas' together, the database's backends' and the soak's, in µs ("" without a ticket).
// Less sensitive to the host's other load than the latencies are.
func cpuPerTicket(s summary) string {
	if s.Created <= 0 {
		return ""
	}
	per := func(sec float64) string {
		if sec < 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f µs", sec/float64(s.Created)*1e6)
	}
	replicas := 0.0
	for _, c := range s.ReplicaCPUSeconds {
		if c < 0 {
			replicas = -1
			break
		}
		replicas += c
	}
	return fmt.Sprintf("replicas %s, database backends %s, soak %s (during the arrivals, over %d created)",
		per(replicas), per(s.DBCPUSeconds), per(s.SoakCPUSeconds), s.Created)
}
