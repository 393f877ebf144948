package queuedb

import (
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The players' claims across queues (internal/queue/lifecycle_claims.go; the migration
// 00015_player_claims.sql). A tick that makes or proposes matches takes sqlLockClaims before
// its queue's row: the ticks of every queue that may take claims run one at a time from
// there to COMMIT, so the claims one reads are the claims it overwrites, and two queues'
// leaders on two replicas cannot claim one player twice. The other changes (answers,
// cancels, placements, expiries of proposals) never write a claim and do not take it; a
// match's result ends its claims without it (EndClaims).
//
// A tick that claims a player locks the rows of his live tickets in the other queues to
// cancel them; their queues' rows come first (their events are numbered under them), in
// name order after its own queue's. No other transaction holds two queues' rows, and the
// ticks that could wait for this one's queue wait at sqlLockClaims, holding nothing.
const (
	sqlLockClaims = `SELECT pg_advisory_xact_lock(5, 0)`

	// Whether another queue than $2 is live: when none is, the players can have no live
	// ticket elsewhere, and the two statements below skip their lookups of every player (a
	// one-time filter). No such ticket can appear meanwhile: an exclusive ticket's creation
	// waits for sqlLockClaims, which the tick holds (create_claims.go).
	sqlAnotherQueue = `EXISTS (SELECT 1 FROM queues WHERE name <> $2 AND deleted_at IS NULL)`

	// The other queues where the players have a live ticket, locked by name.
	sqlLockElsewhereQueues = `
SELECT name FROM queues
WHERE name IN (SELECT queue FROM queue_searching WHERE player_id = ANY($1::text[]) AND queue <> $2)
  AND ` + sqlAnotherQueue + `
ORDER BY name FOR NO KEY UPDATE`

	// Those tickets, by id, with their players' ids.
	sqlLockElsewhereTickets = `
SELECT t.ctid, t.id, t.queue, t.status, coalesce(t.proposal->>'match_id', ''),
       coalesce(t.assignment->>'match_id', ''), coalesce((t.assignment->>'team')::int, 0), t.exclusive,
       ARRAY(SELECT p->>'id' FROM jsonb_array_elements(t.players) AS p)
FROM queue_tickets AS t
WHERE t.id IN (SELECT ticket_id FROM queue_searching WHERE player_id = ANY($1::text[]) AND queue <> $2)
  AND ` + sqlAnotherQueue + `
ORDER BY t.id FOR UPDATE`

	// The players' claims, each with its ticket as it now is.
	sqlReadClaims = `
SELECT c.player_id, c.ticket_id, c.match_id, c.queue, c.until, coalesce(t.id, ''), coalesce(t.queue, ''),
       coalesce(t.status, ''), coalesce(t.proposal->>'match_id', ''), coalesce(t.assignment->>'match_id', '')
FROM queue_claims AS c LEFT JOIN queue_tickets AS t ON t.id = c.ticket_id
WHERE c.player_id = ANY($1::text[])`

	// purge_after is the until a claim is made with, which its end does not change (the
	// migration 00021: the end is a heap-only update of until, which is not indexed).
	sqlWriteClaims = `
INSERT INTO queue_claims (player_id, ticket_id, match_id, queue, until, purge_after)
SELECT u.*, u.until FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
    AS u(player_id, ticket_id, match_id, queue, until)
ON CONFLICT (player_id) DO UPDATE
SET ticket_id = excluded.ticket_id, match_id = excluded.match_id, queue = excluded.queue, until = excluded.until,
    purge_after = excluded.purge_after`

	// The claims ended before $1; a chunk at a time, as the purge's other deletes. They are
	// found by purge_after, at or after until.
	sqlPurgeClaims = `
DELETE FROM queue_claims WHERE player_id IN (
    SELECT player_id FROM queue_claims WHERE purge_after < $1 AND until < $1 ORDER BY purge_after LIMIT $2)
AND until < $1`
)

// claimsTaken says whether a leader's write may take claims: it makes or proposes a match.
func claimsTaken(cause queue.Cause) bool {
	switch c := cause.(type) {
	case queue.TickMatches:
		return len(c.Write.Matches) > 0
	case queue.TickProposals:
		return len(c.Write.Proposals) > 0
	}
	return false
}

// playerReads are what a round trip read of need.Players.
type playerReads struct {
	queues []string // the other queues locked
	live   []queue.TicketState
	claims []queue.Claim
}

// readPlayers queues the reads of players: the other queues' rows, their live tickets, and
// their claims. A ticket of a queue not locked (made since in a queue the first statement
// did not see) is left out: the claim will refuse it when its queue matches it.
func (ch *change) readPlayers(b *pgx.Batch, players []string) *playerReads {
	r := &playerReads{}
	b.Queue(sqlLockElsewhereQueues, players, ch.queue).Query(func(rows pgx.Rows) error {
		var err error
		r.queues, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	b.Queue(sqlLockElsewhereTickets, players, ch.queue).Query(func(rows pgx.Rows) error {
		var row pgtype.TID
		var t queue.TicketState
		var status string
		_, err := pgx.ForEachRow(rows, []any{&row, &t.ID, &t.Queue, &status, &t.Proposal, &t.Match, &t.Team, &t.Exclusive, &t.Players},
			func() error {
				if !slices.Contains(r.queues, t.Queue) {
					return nil
				}
				t.Status = queue.Status(status)
				r.live = append(r.live, t)
				ch.rows[t.ID] = lockedRow{row, t.Queue}
				t.Players = nil
				return nil
			})
		return err
	})
	b.Queue(sqlReadClaims, players).Query(func(rows pgx.Rows) error {
		var err error
		r.claims, err = scanClaims(rows)
		return err
	})
	return r
}

// queueClaims writes the claims a change took.
func queueClaims(b *pgx.Batch, cs []queue.Claim) {
	if len(cs) == 0 {
		return
	}
	// In player order, as EndClaims locks a match's rows: the two never deadlock.
	cs = slices.SortedFunc(slices.Values(cs), func(a, b queue.Claim) int { return strings.Compare(a.Player, b.Player) })
	n := len(cs)
	players, tickets, matches, queues, until := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]pgtype.Timestamptz, n)
	for i, c := range cs {
		players[i], tickets[i], matches[i], queues[i] = c.Player, c.Ticket, c.Match, c.Queue
		until[i] = pgtype.Timestamptz{Time: c.Until, Valid: true}
	}
	b.Queue(sqlWriteClaims, players, tickets, matches, queues, until).Exec(rowsWere(int64(n), "claims written"))
}
