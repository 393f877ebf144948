package queuedb

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Ending tickets: cancels, ticks, deleted queues. The lifecycle decides each (change.go).

const (
	// The queue's row, even a deleted queue's: a tick that was under way when its queue was
	// deleted finds its tickets cancelled and changes nothing.
	sqlLockQueue = `SELECT leader_epoch FROM queues WHERE name = $1 FOR NO KEY UPDATE`

	// The ticket's queue's row (a ticket never changes queue), then the ticket: the order of
	// the migration's comment.
	sqlLockTicketQueue = `
SELECT 1 FROM queues WHERE name = (SELECT queue FROM queue_tickets WHERE id = $1) FOR NO KEY UPDATE`
	sqlLockTicket = `SELECT ` + ticketColumns + `, t.ctid FROM queue_tickets AS t WHERE t.id = $1 FOR UPDATE`

	// The live tickets of a queue (searching, proposed or placing: those holding players in
	// queue_searching), locked one by one in the order of their ids.
	sqlLockLive = `
SELECT t.ctid, t.id, t.queue, t.status, coalesce(t.proposal->>'match_id', '')
FROM (SELECT DISTINCT ticket_id FROM queue_searching WHERE queue = $1 ORDER BY ticket_id) AS s
CROSS JOIN LATERAL (SELECT ctid, id, queue, status, proposal FROM queue_tickets WHERE id = s.ticket_id FOR UPDATE) AS t`
)

// cancelTicket applies a CancelRequest: one transaction in two round trips for a searching
// ticket: the locks and the ticket, then its end and COMMIT (four for a proposed one, whose
// proposal and its tickets are locked and resolved).
func (s *Store) cancelTicket(ctx context.Context, id string, at time.Time, reason string) (queue.Applied, error) {
	var t queue.Ticket
	var c queue.Change
	err := db.InTx(ctx, s.pool, "queue: cancel ticket", func(conn *pgxpool.Conn) error {
		var found bool
		var row pgtype.TID
		ch := &change{at: at.Truncate(time.Microsecond), cause: queue.CancelRequest{Ticket: id, Reason: reason}}
		ch.lock = func(b *pgx.Batch) {
			b.Queue(sqlLockTicketQueue, id)
			b.Queue(sqlLockTicket, id).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var err error
					if t, err = scanTicket(rows, &row); err != nil {
						return err
					}
					found = true
				}
				return rows.Err()
			})
		}
		ch.locked = func(l *queue.Locked) error {
			var states []queue.TicketState
			if found {
				states, ch.rows[id] = []queue.TicketState{queue.StateOf(&t)}, lockedRow{row, t.Queue}
			}
			l.Read(queue.Need{Tickets: []string{id}}, states, nil, nil)
			return nil
		}
		var err error
		c, err = s.run(ctx, conn, ch)
		for i := range c.Transitions {
			if tr := &c.Transitions[i]; tr.Ticket == id {
				tr.Apply(&t, c.At)
			}
		}
		return err
	})
	if err != nil {
		return queue.Applied{}, err
	}
	return queue.Applied{Change: c, Ticket: t}, nil
}

// matchRow is a match as queue_matches stores it.
type matchRow struct {
	teams, pairs string
	attributes   *string // nil: none
}

func newMatchRow(m queue.Match) (matchRow, error) {
	teams := make([]matchTeamJSON, len(m.Teams))
	for i, t := range m.Teams {
		teams[i].RatingTotal, teams[i].Name, teams[i].Roles, teams[i].OpenSlots = t.RatingTotal, t.Name, t.Roles, t.OpenSlots
		teams[i].Players = make([]matchPlayerJSON, len(t.Players))
		for j, p := range t.Players {
			teams[i].Players[j] = matchPlayerJSON(p)
		}
	}
	pairs := make([]pairJSON, len(m.Pairs))
	for i, p := range m.Pairs {
		pairs[i] = pairJSON(p)
	}
	tb, err := json.Marshal(teams)
	if err != nil {
		return matchRow{}, err
	}
	pb, err := json.Marshal(pairs)
	if err != nil {
		return matchRow{}, err
	}
	row := matchRow{teams: string(tb), pairs: string(pb)}
	if as := matchAttributesJSON(m.Attributes); as != nil {
		ab, err := json.Marshal(as)
		if err != nil {
			return matchRow{}, err
		}
		row.attributes = new(string(ab))
	}
	return row, nil
}

// commitTick applies TickMatches (queue.CommitTick). One transaction in two round trips:
//
//  1. BEGIN; the queue's row lock (its leader epoch, for the fence); the tick's tickets of the
//     queue, locked by id, as the lifecycle reads them.
//  2. What the lifecycle decided (queue.TickMatches): the matches whose tickets were all
//     searching, every ticket they and the expiries end, with its searching players and its
//     event; the notification; COMMIT.
//
// A tick that ends nothing rolls back after the first; one without matches or expiries only
// checks that the queue exists.
func (s *Store) commitTick(ctx context.Context, queueName string, w queue.TickWrite, at time.Time) (queue.Applied, error) {
	if len(w.Matches) == 0 && len(w.Expired) == 0 { // a quiet tick: no lock, no transaction
		var exists bool
		err := s.work.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queues WHERE name = $1)`, queueName).Scan(&exists)
		if err == nil && !exists {
			return queue.Applied{}, noQueue(queueName)
		}
		return queue.Applied{}, db.MapError(err, "queue: commit tick")
	}
	w.At = at
	return s.leaderChange(ctx, "queue: commit tick", queueName, at, queue.TickMatches{Queue: queueName, Write: w})
}

// leaderChange runs a change only the queue's leader makes (its tick's matches and
// proposals, the deadlines it expires): fenced, so that a replica deposed since its last
// renewal changes nothing.
func (s *Store) leaderChange(ctx context.Context, what, queueName string, at time.Time, cause queue.Cause, first ...func(b *pgx.Batch)) (queue.Applied, error) {
	var done queue.Change
	err := db.InTx(ctx, s.work, what, func(conn *pgxpool.Conn) error {
		var found bool
		var epoch int64
		ch := &change{at: at, cause: cause, queue: queueName, readFirst: true}
		// A partition's tick is fenced by the partition's epoch (lead_partition.go).
		fenced, part := queueName, partitionOf(cause)
		var partFound bool
		var partEpoch int64
		ch.lock = func(b *pgx.Batch) {
			if claimsTaken(cause) {
				b.Queue(sqlLockClaims)
			}
			b.Queue(sqlLockQueue, queueName).Query(scanIfAny(&found, &epoch))
			if part != "" {
				fenced = queue.PartitionKey(queueName, part)
				b.Queue(sqlLockPartition, queueName, part).Query(scanIfAny(&partFound, &partEpoch))
			}
			for _, f := range first {
				f(b)
			}
		}
		ch.locked = func(*queue.Locked) error {
			if !found {
				return noQueue(queueName)
			}
			if part != "" {
				found, epoch = partFound, partEpoch
			}
			if mine := s.fence(fenced); mine != nil && (!found || *mine != epoch) {
				return deposed(queueName)
			}
			return nil
		}
		var err error
		done, err = s.run(ctx, conn, ch)
		return err
	})
	if err != nil {
		return queue.Applied{}, err
	}
	return queue.Applied{Change: done}, nil
}

// deleteQueue applies QueueDeleted. The queue's row is locked FOR UPDATE, which waits for
// the batches creating tickets in it and keeps new ones out; its live tickets are cancelled,
// by id, and the row becomes a tombstone.
func (s *Store) deleteQueue(ctx context.Context, name string, at time.Time) (queue.Applied, error) {
	var c queue.Change
	err := db.InTx(ctx, s.pool, "queue: delete queue", func(conn *pgxpool.Conn) error {
		var found bool
		var live []queue.TicketState
		ch := &change{at: at, cause: queue.QueueDeleted{Queue: name}, queue: name}
		ch.lock = func(b *pgx.Batch) {
			b.Queue(`SELECT 1 FROM queues WHERE name = $1 AND deleted_at IS NULL FOR UPDATE`, name).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					found = true
				}
				return rows.Err()
			})
			b.Queue(sqlLockLive, name).Query(func(rows pgx.Rows) error {
				var row pgtype.TID
				var t queue.TicketState
				var status string
				_, err := pgx.ForEachRow(rows, []any{&row, &t.ID, &t.Queue, &status, &t.Proposal}, func() error {
					t.Status = queue.Status(status)
					live = append(live, t)
					ch.rows[t.ID] = lockedRow{row, t.Queue}
					return nil
				})
				return err
			})
		}
		ch.locked = func(l *queue.Locked) error {
			if !found {
				return noQueue(name)
			}
			l.Read(queue.Need{}, live, nil, nil)
			return nil
		}
		ch.also = func(b *pgx.Batch) {
			b.Queue(`UPDATE queues SET deleted_at = $2 WHERE name = $1`, name, at)
			b.Queue(`DELETE FROM queue_partitions WHERE queue = $1`, name) // a queue made again starts with none
		}
		var err error
		c, err = s.run(ctx, conn, ch)
		return err
	})
	if err != nil {
		return queue.Applied{}, err
	}
	return queue.Applied{Change: c}, nil
}
