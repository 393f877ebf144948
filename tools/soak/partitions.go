package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// -partitions N partitions the queue by a mode of N values (partition_by, issue 37): ticket n
// is of mode m(n mod N). The soak then checks what the issue asks of partitions: each replica
// leads some (its /metrics' matchmaker_queue_leading) once they are shared out; with
// -kill-after D, the last replica is killed with SIGKILL D after the arrivals start, and the
// others lead every partition within a lease (how long is measured); at the end, in the
// database, no ticket is in two matches or has other than one final event, none is left
// searching, and no match holds two modes.

// partitionSummary is what the soak saw of the partitions.
type partitionSummary struct {
	Partitions int `json:"partitions"`
	// LeadingAtStart is how many partitions each replica led once all were led.
	LeadingAtStart []int  `json:"leading_at_start"`
	SharedOutS     string `json:"shared_out_after,omitempty"` // from the queue's definition
	Killed         int    `json:"killed"`                     // the replica SIGKILLed; -1: none
	// MovedS is from the SIGKILL until the live replicas led every partition again.
	MovedS    string `json:"moved_within,omitempty"`
	MovedNote string `json:"moved_note,omitempty"`
	// From the database, at the end.
	CrossingMatches  int64            `json:"matches_crossing_partitions"`
	TicketsInTwo     int64            `json:"tickets_in_two_matches"`
	TicketsBadEvents int64            `json:"tickets_without_exactly_one_final_event"`
	TicketsSearching int64            `json:"tickets_left_searching"`
	CheckError       string           `json:"check_error,omitempty"`
	MatchesByMode    map[string]int64 `json:"matches_by_mode,omitempty"`
	MatchesAfterKill map[string]int64 `json:"matches_after_kill_by_mode,omitempty"`
	killedAt         time.Time
}

// partitionState is the soak's view of the partitions while it runs.
type partitionState struct {
	mu   sync.Mutex
	sum  partitionSummary
	dead atomic.Int32 // a bit per killed replica: pick skips them
	// arrivals is closed when the arrivals start (load.started is set).
	arrivals chan struct{}
}

func modeOf(n int64, partitions int) string { return fmt.Sprintf("m%d", n%int64(partitions)) }

// partitionDef is the queue definition's part for -partitions: "" without.
func (c config) partitionDef() string {
	if c.partitions == 0 {
		return ""
	}
	return `,"attributes":{"mode":{"type":"string"}},"rules":[{"name":"mode","type":"equal","attribute":"mode"}],"partition_by":"mode"`
}

// leading reads the partitions each replica leads from its /metrics (nil for a dead one).
func (l *load) leading() [][]string {
	out := make([][]string, len(l.reps))
	label := `queue="` + l.queue + `"`
	for i, r := range l.reps {
		if l.parts.dead.Load()&(1<<i) != 0 {
			continue
		}
		m, err := r.metrics()
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(m), "\n") {
			if !strings.HasPrefix(line, "matchmaker_queue_leading{") || !strings.Contains(line, label) || !strings.HasSuffix(line, "} 1") {
				continue
			}
			if _, rest, ok := strings.Cut(line, `partition="`); ok {
				if v, _, _ := strings.Cut(rest, `"`); v != "" {
					out[i] = append(out[i], v)
				}
			}
		}
	}
	return out
}

// allLed says whether every partition is led by a live replica, and by one only.
func allLed(led [][]string, partitions int) bool {
	var all []string
	for _, l := range led {
		all = append(all, l...)
	}
	slices.Sort(all)
	return len(all) == partitions && len(slices.Compact(all)) == partitions
}

// watchPartitions waits for the partitions to be shared out, then, with -kill-after, kills
// the last replica and measures how long until the others lead every partition.
func (l *load) watchPartitions(ctx context.Context, defined time.Time, logf func(string, ...any)) {
	p := &l.parts
	p.sum.Killed = -1
	for ctx.Err() == nil && l.c.partitions > 0 {
		led := l.leading()
		if allLed(led, l.c.partitions) && !slices.ContainsFunc(led, func(x []string) bool { return len(x) == 0 }) {
			p.mu.Lock()
			for _, x := range led {
				p.sum.LeadingAtStart = append(p.sum.LeadingAtStart, len(x))
			}
			p.sum.SharedOutS = time.Since(defined).Round(time.Millisecond).String()
			p.mu.Unlock()
			logf("partitions shared out %v after the definition: %v", time.Since(defined).Round(time.Millisecond), led)
			break
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	if l.c.killAfter == 0 || ctx.Err() != nil {
		return
	}
	select {
	case <-l.parts.arrivals:
	case <-ctx.Done():
		return
	}
	sleepCtx(ctx, time.Until(l.started.Add(l.c.killAfter)))
	if ctx.Err() != nil {
		return
	}
	victim := l.reps[len(l.reps)-1]
	victim.mu.Lock()
	victim.stopping = true // not an early exit: the soak's own doing
	victim.mu.Unlock()
	p.dead.Or(1 << victim.index)
	killedAt := time.Now()
	victim.kill()
	logf("replica %d SIGKILLed", victim.index)
	if l.c.partitions == 0 { // a queue of one partition: the soak's timeline shows the rest
		p.mu.Lock()
		p.sum.Killed, p.sum.killedAt = victim.index, killedAt
		p.mu.Unlock()
		return
	}
	for ctx.Err() == nil {
		led := l.leading()
		if allLed(led, l.c.partitions) {
			took := time.Since(killedAt)
			p.mu.Lock()
			p.sum.Killed, p.sum.MovedS, p.sum.killedAt = victim.index, took.Round(time.Millisecond).String(), killedAt
			p.mu.Unlock()
			logf("every partition led again %v after the kill: %v", took.Round(time.Millisecond), led)
			return
		}
		if time.Since(killedAt) > time.Minute {
			p.mu.Lock()
			p.sum.Killed, p.sum.MovedNote, p.sum.killedAt = victim.index, fmt.Sprintf("not all led a minute after the kill: %v", led), killedAt
			p.mu.Unlock()
			return
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(max(d, 0)):
	}
}

// checkPartitions reads the database's verdict on the run's tickets and matches.
func (l *load) checkPartitions(sum *summary) {
	p := &l.parts
	p.mu.Lock()
	out := p.sum
	p.mu.Unlock()
	out.Partitions = l.c.partitions
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := l.db
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.conn.QueryRow(ctx, `
WITH held AS (
  SELECT m.id AS match, m.created_at, p->>'ticket_id' AS ticket
  FROM queue_matches m, jsonb_array_elements(m.teams) tm, jsonb_array_elements(tm->'players') p WHERE m.queue = $1),
crossing AS (SELECT h.match FROM held h JOIN queue_tickets k ON k.id = h.ticket GROUP BY h.match HAVING count(DISTINCT coalesce(k.attributes->>'mode', '')) > 1),
twice AS (SELECT ticket FROM held GROUP BY ticket HAVING count(DISTINCT match) > 1),
events AS (SELECT k.id FROM queue_tickets k LEFT JOIN queue_events e ON e.ticket_id = k.id AND e.queue = $1
  WHERE k.queue = $1 AND k.status <> 'searching' GROUP BY k.id HAVING count(e.seq) <> 1)
SELECT (SELECT count(*) FROM crossing), (SELECT count(*) FROM twice), (SELECT count(*) FROM events),
  (SELECT count(*) FROM queue_tickets WHERE queue = $1 AND status = 'searching')`, l.queue).
		Scan(&out.CrossingMatches, &out.TicketsInTwo, &out.TicketsBadEvents, &out.TicketsSearching)
	if err == nil {
		out.MatchesByMode, err = modeCounts(ctx, d.conn, l.queue, time.Time{})
	}
	if err == nil && !out.killedAt.IsZero() {
		out.MatchesAfterKill, err = modeCounts(ctx, d.conn, l.queue, out.killedAt)
	}
	if err != nil {
		out.CheckError = err.Error()
	}
	sum.Partitions = &out
}

// modeCounts counts the queue's matches made after since, by mode.
func modeCounts(ctx context.Context, conn *pgx.Conn, queue string, since time.Time) (map[string]int64, error) {
	rows, err := conn.Query(ctx, `
SELECT a->>'value', count(*) FROM queue_matches m, jsonb_array_elements(m.attributes) a
WHERE m.queue = $1 AND a->>'name' = 'mode' AND m.created_at > $2 GROUP BY 1`, queue, since)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	var k string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&k, &n}, func() error { out[k] = n; return nil })
	return out, err
}

// partitionsRow is the summary table's line for -partitions.
func partitionsRow(s *partitionSummary) string {
	moved := "no kill"
	if s.Killed >= 0 {
		moved = fmt.Sprintf("replica %d SIGKILLed, all led again within %s%s", s.Killed, s.MovedS, s.MovedNote)
	}
	return fmt.Sprintf("%d by mode; led at start %v (shared out %s after the definition); %s; matches crossing partitions %d, tickets in two matches %d, without exactly one final event %d, left searching %d; matches by mode %v, after the kill %v%s",
		s.Partitions, s.LeadingAtStart, s.SharedOutS, moved, s.CrossingMatches, s.TicketsInTwo, s.TicketsBadEvents, s.TicketsSearching,
		s.MatchesByMode, s.MatchesAfterKill, map[bool]string{true: "; check error: " + s.CheckError, false: ""}[s.CheckError != ""])
}
