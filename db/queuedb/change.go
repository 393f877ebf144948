package queuedb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A change of a queue's tickets, proposals and matches on Postgres. The lifecycle
// (queue.Decide, internal/queue/lifecycle.go) decides it; the store only locks and reads what
// the lifecycle asks for, a round trip at a time, and writes what it decided before COMMIT,
// in the same transaction. Every change takes its queue's row first (FOR NO KEY UPDATE, as a
// ticket's creation takes it FOR KEY SHARE): the writers of one queue's events queue on that
// row, so they never deadlock on the rows after it (proposals, matches, tickets, each locked
// in the order of their ids), and the events of two changes are numbered in the order they
// commit.

// Apply implements queue.ChangeStore: each cause's locks and what its answer reads beside the
// change (tickets.go, proposals.go, placement.go), in the change's transaction.
func (s *Store) Apply(ctx context.Context, at time.Time, cause queue.Cause) (queue.Applied, error) {
	at = at.Truncate(time.Microsecond) // as stored
	switch c := cause.(type) {
	case queue.TickMatches:
		return s.commitTick(ctx, c.Queue, c.Write, at)
	case queue.TickProposals:
		return s.propose(ctx, c.Queue, c.Write, at)
	case queue.CancelRequest:
		return s.cancelTicket(ctx, c.Ticket, at, c.Reason)
	case queue.QueueDeleted:
		return s.deleteQueue(ctx, c.Queue, at)
	case queue.ReadyCheckAnswer:
		return s.proposalChange(ctx, "queue: answer proposal", c.Proposal, at, c)
	case queue.PlacementAnswer:
		return s.proposalChange(ctx, "queue: end placement", c.Proposal, at, c)
	case queue.DeadlinesPassed:
		return s.expireProposals(ctx, c.Queue, at)
	case queue.MatchPlacement:
		return s.placeMatch(ctx, c, at)
	}
	return queue.Applied{}, fmt.Errorf("queue: %s is not a change Apply makes", cause.Op())
}

// change is one change: what happened at at, and what the call locks before the lifecycle
// asks (lock, checked by locked after that first round trip).
type change struct {
	at    time.Time // to the microsecond, as stored
	cause queue.Cause
	queue string // the tickets read must be this queue's ("": any)
	// lock queues, after BEGIN, the queue's row and what the call reads itself (the ticket
	// to cancel, the proposals due, the queue's live tickets).
	lock func(b *pgx.Batch)
	// locked, after the first round trip, checks what it found (the queue, the leader's
	// fence) and gives the lifecycle what lock read.
	locked func(l *queue.Locked) error
	// readFirst: the first round trip also reads what the lifecycle names before anything is
	// read (the tick's tickets, the proposal answered); false when lock reads it itself.
	readFirst bool
	// also queues what the call writes beside the change, even an empty one (a deleted
	// queue's tombstone).
	also func(b *pgx.Batch)

	rows    map[string]lockedRow   // the tickets locked, by id: where they are
	matches map[string]queue.Match // the matches locked, by id
}

// lockedRow is where a locked ticket's row is, and its queue (whose players' rows in
// queue_searching a ticket that ends frees: they are found by queue and ticket).
type lockedRow struct {
	at    pgtype.TID
	queue string
}

// run runs ch in a transaction on conn, and returns what it wrote (nothing, rolled back,
// when the lifecycle changed nothing).
func (s *Store) run(ctx context.Context, conn *pgxpool.Conn, ch *change) (queue.Change, error) {
	var l queue.Locked
	var need queue.Need
	ch.rows, ch.matches = make(map[string]lockedRow), make(map[string]queue.Match)
	if ch.readFirst {
		var err error
		if _, need, err = queue.Decide(&l, ch.at, ch.cause); err != nil {
			return queue.Change{}, err
		}
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	ch.lock(b)
	for first := true; ; first = false {
		r := ch.read(b, need)
		var pr *playerReads
		if len(need.Players) > 0 {
			pr = ch.readPlayers(b, need.Players)
		}
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return queue.Change{}, err
		}
		if first && ch.locked != nil {
			if err := ch.locked(&l); err != nil {
				return queue.Change{}, err
			}
		}
		l.Read(need, r.tickets, r.proposals, r.matches)
		if pr != nil {
			l.ReadPlayers(need.Players, pr.claims, pr.live)
		}
		c, next, err := queue.Decide(&l, ch.at, ch.cause)
		if err != nil {
			return queue.Change{}, err
		}
		if next.Empty() {
			return c, ch.commit(ctx, conn, c)
		}
		need, b = next, &pgx.Batch{}
	}
}

// commit writes c with COMMIT, unless there is nothing to write.
func (ch *change) commit(ctx context.Context, conn *pgxpool.Conn, c queue.Change) error {
	if c.Empty() && ch.also == nil {
		return nil // rolled back as the connection is released
	}
	b := &pgx.Batch{}
	if err := ch.write(b, c); err != nil {
		return err
	}
	if ch.also != nil {
		ch.also(b)
	}
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return db.Committed(conn)
}

// reads is what a round trip read for the lifecycle, once the batch is closed.
type reads struct {
	tickets   []queue.TicketState
	proposals []queue.Proposal
	matches   []queue.Match
}

const (
	// What the lifecycle reads of tickets, locked one by one in the order of their ids (the
	// lifecycle sorts them): one primary-key lookup each, whatever the statistics say.
	sqlLockTicketStates = `
SELECT t.ctid, t.id, t.queue, t.status, coalesce(t.proposal->>'match_id', ''),
       coalesce(t.assignment->>'match_id', ''), coalesce((t.assignment->>'team')::int, 0), t.exclusive
FROM unnest($1::text[]) AS u(id)
CROSS JOIN LATERAL (
    SELECT ctid, id, queue, status, proposal, assignment, exclusive FROM queue_tickets
    WHERE id = u.id AND ($2::text = '' OR queue = $2) FOR UPDATE
) AS t`

	sqlLockProposals = `SELECT ` + proposalColumns + ` FROM queue_proposals AS p WHERE p.id = ANY($1::text[]) ORDER BY p.id FOR UPDATE`

	sqlLockMatches = `
SELECT id, queue, created_at, region, teams, pairs, skill_difference, average_difference,
       coalesce(backfill_of, ''), coalesce(backfill_ticket, ''), attributes, connection
FROM queue_matches WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`
)

// read queues the reads of need on b.
func (ch *change) read(b *pgx.Batch, need queue.Need) *reads {
	r := &reads{}
	if len(need.Proposals) > 0 {
		b.Queue(sqlLockProposals, need.Proposals).Query(func(rows pgx.Rows) error {
			var err error
			r.proposals, err = collectProposals(rows)
			return err
		})
	}
	if len(need.Matches) > 0 {
		b.Queue(sqlLockMatches, need.Matches).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				m, err := scanMatch(rows)
				if err != nil {
					return err
				}
				r.matches = append(r.matches, m)
				ch.matches[m.ID] = m
			}
			return rows.Err()
		})
	}
	if len(need.Tickets) > 0 {
		b.Queue(sqlLockTicketStates, need.Tickets, ch.queue).Query(func(rows pgx.Rows) error {
			var row pgtype.TID
			var t queue.TicketState
			var status string
			_, err := pgx.ForEachRow(rows, []any{&row, &t.ID, &t.Queue, &status, &t.Proposal, &t.Match, &t.Team, &t.Exclusive}, func() error {
				t.Status = queue.Status(status)
				r.tickets = append(r.tickets, t)
				ch.rows[t.ID] = lockedRow{row, t.Queue}
				return nil
			})
			return err
		})
	}
	return r
}
