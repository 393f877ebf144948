package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// -queues 2: a player across queues (docs/queue.md, "Several queues at once"). A second
// queue like the first is defined and led by another replica than the first's; every
// arrival creates its ticket in both, and long-polls both. The run then checks, in the
// database, what the claims promise: no player in two matches, every ticket of a matched
// player in the other queue cancelled matched_elsewhere, none cancelled so whose player was
// not matched in the other, and every arrival's two tickets stored.

// exclusiveSummary is what the database holds of the two queues' tickets, by first player
// (an arrival's two tickets have the same players).
type exclusiveSummary struct {
	Queues       [2]string        `json:"queues"`
	Leaders      [2]int           `json:"leaders"` // the replica leading each queue when the arrivals began
	Tickets      map[string]int64 `json:"tickets"` // by queue, status (reason)
	Arrivals     int64            `json:"arrivals_stored"`
	Unpaired     int64            `json:"unpaired"`           // arrivals with a ticket in one queue only (a creation failed)
	MatchedTwice int64            `json:"matched_twice"`      // arrivals in two matches live at once: must be 0
	Sequential   int64            `json:"matched_sequential"` // matched in both, the second made after the first's result or ticket_ttl_s
	NotCancelled int64            `json:"not_cancelled"`      // matched in one queue, the other ticket not cancelled matched_elsewhere: must be 0
	WrongCancels int64            `json:"wrong_cancels"`      // cancelled matched_elsewhere, not matched (nor proposed) in the other: must be 0
	Conflicts    float64          `json:"claim_conflicts"`    // matchmaker_queue_claim_conflicts_total, both queues, every replica
	Elsewhere    float64          `json:"matched_elsewhere"`
	CheckError   string           `json:"check_error,omitempty"`
}

// defineSecondQueue defines the second queue, under a new name until its leader is another
// replica than the first queue's (each replica takes the queues it finds free, and the
// replica that defines one finds it first).
func (l *load) defineSecondQueue(ctx context.Context, logf func(string, ...any)) error {
	first := l.leaderOf(l.queue)
	body := fmt.Sprintf(`{"context":{"game_type":"soak"},"team_size":%d,"expansions":{"interval":%s},"ticket_ttl_s":300,"tick_ms":%d}`,
		l.c.teamSize, l.c.interval, l.c.tickMS)
	for attempt := range 20 {
		name := l.queue + "-b" + strconv.Itoa(attempt)
		// Defined through another replica than the first queue's leader, which learns of it
		// at once; the others at their next read of the definitions.
		other := l.reps[(first+1)%len(l.reps)]
		if st, b, _, err := l.do(ctx, l.key, "queue", http.MethodPut, other.base+"/v1/queues/"+name, []byte(body), l.c.timeout); err != nil || st != http.StatusCreated {
			return fmt.Errorf("PUT /v1/queues/%s: %d %s %v", name, st, b, err)
		}
		leader := -1
		for deadline := time.Now().Add(20 * time.Second); leader < 0 && time.Now().Before(deadline); {
			if leader = l.leaderOf(name); leader < 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
		if leader >= 0 && leader != first {
			l.queue2 = name
			logf("queue %s led by replica %d, queue %s by replica %d: every arrival searches both", l.queue, first, name, leader)
			return nil
		}
		l.deleteNamed(ctx, name)
	}
	return fmt.Errorf("no second queue got a leader other than replica %d in 20 tries", first)
}

// leaderOf is the replica that leads queue, -1 when none says so.
func (l *load) leaderOf(queue string) int {
	for _, r := range l.reps {
		if r.sampleQueue(queue).Leader {
			return r.index
		}
	}
	return -1
}

func (l *load) deleteNamed(ctx context.Context, name string) {
	_, _, _, _ = l.do(ctx, l.key, "queue", http.MethodDelete, l.reps[0].base+"/v1/queues/"+name, nil, l.c.timeout)
}

// ticketInBoth is an arrival of -queues 2: its ticket created in both queues at once, each
// long-polled to its end.
func (l *load) ticketInBoth(ctx, resultsCtx context.Context, key string, body []byte, first string, due time.Time) {
	var wg sync.WaitGroup
	for _, q := range []string{l.queue, l.queue2} {
		wg.Go(func() {
			if id := l.createIn(ctx, q, key, body, first, due); id != "" {
				l.startWaiting()
				defer l.waiting.Add(-1)
				l.longPoll(ctx, resultsCtx, key, id)
			}
		})
	}
	wg.Wait()
}

// sqlExclusive counts the two queues' tickets by arrival (first player). A player in both
// queues' matches is a double only when the two matches were live at once: a match is live
// from its creation to its result, or to ticket_ttl_s after its creation, when its claim ends
// (docs/queue.md, "Several queues at once"). A second match made after the first one's end
// is the player's next game, counted apart (sequential). A deleted queue's row stays (a
// tombstone), so its ticket_ttl is still there; without it the match is live to its result.
const sqlExclusive = `
WITH t AS (
    SELECT players->0->>'id' AS player, queue, status, reason, assignment->>'match_id' AS match_id
    FROM queue_tickets WHERE queue IN ($1, $2)
), a AS (
    SELECT player, count(*) AS n,
           count(*) FILTER (WHERE status = 'matched') AS matched,
           count(*) FILTER (WHERE status IN ('matched', 'proposed', 'placing')) AS live,
           count(*) FILTER (WHERE status = 'cancelled' AND reason = 'matched_elsewhere') AS elsewhere
    FROM t GROUP BY player
), w AS (
    SELECT t.player, m.created_at AS made,
           coalesce(least(r.created_at, m.created_at + q.ticket_ttl), r.created_at, 'infinity') AS ended
    FROM t JOIN queue_matches m ON m.id = t.match_id
    LEFT JOIN matches r ON r.match_id = t.match_id
    LEFT JOIN queues q ON q.name = t.queue
    WHERE t.status = 'matched'
), twice AS (
    SELECT x.player, bool_or(x.made < y.ended AND y.made < x.ended) AS overlap
    FROM w x JOIN w y ON x.player = y.player AND (x.made, x.ended) < (y.made, y.ended)
    GROUP BY x.player
)
SELECT count(*), count(*) FILTER (WHERE n <> 2),
       (SELECT count(*) FILTER (WHERE overlap) FROM twice), (SELECT count(*) FILTER (WHERE NOT overlap) FROM twice),
       count(*) FILTER (WHERE n = 2 AND matched = 1 AND elsewhere <> 1),
       count(*) FILTER (WHERE elsewhere > 0 AND live = 0)
FROM a`

// checkExclusive reads the invariants of -queues 2 from the database and the replicas'
// metrics.
func (l *load) checkExclusive(logf func(string, ...any)) *exclusiveSummary {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &exclusiveSummary{Queues: [2]string{l.queue, l.queue2}, Leaders: [2]int{l.leaderOf(l.queue), l.leaderOf(l.queue2)},
		Tickets: map[string]int64{}}
	for _, q := range s.Queues {
		counts, _, err := l.db.queueCounts(ctx, q)
		if err != nil {
			s.CheckError = err.Error()
		}
		for k, n := range counts {
			s.Tickets[q+" "+k] = n
		}
	}
	l.db.mu.Lock()
	err := l.db.conn.QueryRow(ctx, sqlExclusive, l.queue, l.queue2).Scan(&s.Arrivals, &s.Unpaired, &s.MatchedTwice, &s.Sequential, &s.NotCancelled, &s.WrongCancels)
	l.db.mu.Unlock()
	if err != nil && err != pgx.ErrNoRows {
		s.CheckError = err.Error()
		logf("checking the two queues: %v", err)
	}
	for _, r := range l.reps {
		m, err := r.metrics()
		if err != nil {
			continue
		}
		for _, q := range s.Queues {
			label := `queue="` + q + `"`
			s.Conflicts += max(0, m.value("matchmaker_queue_claim_conflicts_total", label))
			s.Elsewhere += max(0, m.value("matchmaker_queue_matched_elsewhere_total", label))
		}
	}
	return s
}

// String is the summary's line.
func (s *exclusiveSummary) String() string {
	verdict := "held"
	if s.MatchedTwice+s.NotCancelled+s.WrongCancels > 0 || s.CheckError != "" {
		verdict = "BROKEN"
	}
	return fmt.Sprintf("%s (queues %s led by replica %d, %s by replica %d): %d arrivals stored (%d in one queue only); "+
		"in two live matches %d (matched in both one after the other's end %d), matched without the other cancelled matched_elsewhere %d, cancelled matched_elsewhere without a match elsewhere %d; "+
		"claim conflicts %.0f, cancelled matched_elsewhere %.0f (metrics)%s",
		verdict, s.Queues[0], s.Leaders[0], s.Queues[1], s.Leaders[1], s.Arrivals, s.Unpaired, s.MatchedTwice, s.Sequential, s.NotCancelled, s.WrongCancels,
		s.Conflicts, s.Elsewhere, map[bool]string{true: "; error: " + s.CheckError, false: ""}[s.CheckError != ""])
}

// create posts the ticket to a replica; it returns the ticket's id, or "" when the creation
// failed (kept, with its first player, for the database's check).
func (l *load) create(ctx context.Context, key string, body []byte, first string, due time.Time) string {
	return l.createIn(ctx, l.queue, key, body, first, due)
}

// createIn is create in queue.
func (l *load) createIn(ctx context.Context, queue, key string, body []byte, first string, due time.Time) string {
	st, b, _, err := l.do(ctx, key, "create", http.MethodPost, l.pick().base+"/v1/queues/"+queue+"/tickets", body, l.c.timeout)
	if err == nil && st == http.StatusCreated {
		var t struct{ ID string }
		if json.Unmarshal(b, &t) == nil && t.ID != "" {
			lat := time.Since(due)
			l.created.Add(1)
			l.mu.Lock()
			l.createLat = append(l.createLat, lat)
			l.mu.Unlock()
			return t.ID
		}
	}
	status := strconv.Itoa(st)
	switch {
	case err != nil && ctx.Err() != nil:
		status = "cut"
	case err != nil:
		status = "no answer"
	case st == http.StatusCreated:
		status = "201 without an id"
	}
	l.mu.Lock()
	l.failed = append(l.failed, failedCreate{player: first, status: status})
	l.mu.Unlock()
	return ""
}
