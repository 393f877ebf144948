package queue

import (
	"maps"
	"slices"
	"time"
)

// What a store keeps, and until when: the purge's rules, a match's end for its players'
// claims, and the arithmetic of a player's standing, decided here once. The memory store
// calls these; the Postgres store says the same in its statements (db/queuedb purge.go,
// claims.go, standing.go), and the contract suite (queuetest) holds both to it.

// Purgeable says whether a purge deletes the ticket: it is finished (no longer searching,
// proposed or placing) and has not changed since before.
func (t *Ticket) Purgeable(before time.Time) bool {
	return !t.Status.Live() && t.UpdatedAt.Before(before)
}

// Purgeable says whether a purge deletes the match: it was made before before (its result,
// if any, has come long since; the ratings keep what it taught).
func (m *Match) Purgeable(before time.Time) bool { return m.CreatedAt.Before(before) }

// Purgeable says whether a purge deletes the claim: it ended before before.
func (c *Claim) Purgeable(before time.Time) bool { return c.Until.Before(before) }

// EventsPurgeable is how many of a queue's events, oldest first, a purge deletes: the ones
// older than before, up to the first that is not, and, while the queue has a webhook, up
// to its cursor (the events after it are the outbox). A deleted queue's webhook sends no
// more, so its outbox is not kept. The events left still count up without gaps.
func EventsPurgeable(events []Event, before time.Time, def *Queue, deleted bool, webhookCursor int64) int {
	outbox := def.Webhook != nil && !deleted
	n := 0
	for n < len(events) && events[n].At.Before(before) && (!outbox || events[n].Seq <= webhookCursor) {
		n++
	}
	return n
}

// End ends c at at if match holds it and it lasts past at: match's result has come, and its
// player may be matched again at once rather than when the queue's ticket_ttl_s runs out.
// It reports whether c changed.
func (c *Claim) End(match string, at time.Time) bool {
	if c.Match != match || !c.Until.After(at) {
		return false
	}
	c.Until = at
	return true
}

// PlayLowPriority takes one from the low-priority games the player has left (never below
// 0): he played a match in the low-priority pool (Change.LowPriority).
func (s *Standing) PlayLowPriority() {
	s.LowPriorityGames = max(s.LowPriorityGames-1, 0)
}

// Partitions lists a partitioned queue's partitions from the partition_by attributes of its
// live tickets (searching, proposed or placing: PartitionOf) and the partitions that
// published stats: sorted, without "" (a queue without partitions).
func (q *Queue) Partitions(live []*Ticket, published []string) []string {
	values := make(map[string]bool, len(published))
	for i := range live {
		values[q.PartitionOf(live[i].Attributes)] = true
	}
	for _, v := range published {
		values[v] = true
	}
	delete(values, "")
	return slices.Sorted(maps.Keys(values))
}
