package queuedb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The reads: tickets, matches, events, the webhook cursor, and the changes the leader loads.

const ticketColumns = `t.id, t.queue, t.status, t.players, t.latencies, t.created_at, t.expires_at, t.updated_at,
    t.reason, t.assignment, t.idempotency_key, t.body_hash, t.backfill, t.attributes, t.owner, t.proposal, t.exclusive`

// GetTicket implements queue.Store.
func (s *Store) GetTicket(ctx context.Context, id string) (queue.Ticket, error) {
	t, err := scanTicket(s.pool.QueryRow(ctx, `SELECT `+ticketColumns+` FROM queue_tickets AS t WHERE t.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return queue.Ticket{}, apperr.New(apperr.NotFound, "no ticket %q", id)
	}
	return t, db.MapError(err, "queue: get ticket")
}

// scanTicket reads a row of ticketColumns, and then extra.
func scanTicket(row pgx.Row, extra ...any) (queue.Ticket, error) {
	var t queue.Ticket
	var status string
	var players, latencies, assignment, backfill, attributes, proposal []byte
	var key *string
	var hash []byte
	dst := append([]any{&t.ID, &t.Queue, &status, &players, &latencies, &t.CreatedAt, &t.ExpiresAt, &t.UpdatedAt,
		&t.Reason, &assignment, &key, &hash, &backfill, &attributes, &t.Owner, &proposal, &t.Exclusive}, extra...)
	if err := row.Scan(dst...); err != nil {
		return queue.Ticket{}, err
	}
	var err error
	if t.Proposal, err = readTicketProposal(proposal); err != nil {
		return queue.Ticket{}, fmt.Errorf("stored proposal of ticket %q: %w", t.ID, err)
	}
	if t.Attributes, err = readTicketAttributes(attributes); err != nil {
		return queue.Ticket{}, fmt.Errorf("stored attributes of ticket %q: %w", t.ID, err)
	}
	t.Status = queue.Status(status)
	var ps []ticketPlayerJSON
	if err := json.Unmarshal(players, &ps); err != nil {
		return queue.Ticket{}, fmt.Errorf("stored players of ticket %q: %w", t.ID, err)
	}
	t.Players = make([]queue.Player, len(ps))
	for i, p := range ps {
		t.Players[i] = queue.Player(p)
	}
	if latencies != nil {
		if err := json.Unmarshal(latencies, &t.Latencies); err != nil {
			return queue.Ticket{}, fmt.Errorf("stored latencies of ticket %q: %w", t.ID, err)
		}
	}
	if assignment != nil {
		var a assignmentJSON
		if err := json.Unmarshal(assignment, &a); err != nil {
			return queue.Ticket{}, fmt.Errorf("stored assignment of ticket %q: %w", t.ID, err)
		}
		t.Assignment = a.assignment()
	}
	if backfill != nil {
		var b backfillJSON
		if err := json.Unmarshal(backfill, &b); err != nil {
			return queue.Ticket{}, fmt.Errorf("stored backfill of ticket %q: %w", t.ID, err)
		}
		t.Backfill = b.backfill()
	}
	if key != nil {
		t.IdempotencyKey = *key
		copy(t.BodyHash[:], hash)
	}
	return t, nil
}

const sqlGetMatch = `
SELECT id, queue, created_at, region, teams, pairs, skill_difference, average_difference,
       coalesce(backfill_of, ''), coalesce(backfill_ticket, ''), attributes, connection
FROM queue_matches WHERE id = $1`

// GetMatch implements queue.Store.
func (s *Store) GetMatch(ctx context.Context, id string) (queue.Match, error) {
	return s.getMatch(ctx, s.pool, id)
}

// getMatch reads a match with q (the pool, or a transaction's connection).
func (s *Store) getMatch(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string) (queue.Match, error) {
	m, err := scanMatch(q.QueryRow(ctx, sqlGetMatch, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return queue.Match{}, apperr.New(apperr.NotFound, "no match %q", id)
	}
	return m, db.MapError(err, "queue: get match")
}

const sqlMatchConnection = `SELECT connection FROM queue_matches WHERE id = $1`

// MatchConnection implements queue.Store.
func (s *Store) MatchConnection(ctx context.Context, id string) (json.RawMessage, error) {
	var connection []byte
	err := s.pool.QueryRow(ctx, sqlMatchConnection, id).Scan(&connection)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "no match %q", id)
	}
	if err != nil {
		return nil, db.MapError(err, "queue: match connection")
	}
	return connection, nil
}

// scanMatch reads a row of sqlGetMatch's columns.
func scanMatch(row pgx.Row) (queue.Match, error) {
	var m queue.Match
	var teams, pairs, attributes, connection []byte
	if err := row.Scan(&m.ID, &m.Queue, &m.CreatedAt, &m.Region, &teams, &pairs,
		&m.SkillDifference, &m.AverageDifference, &m.BackfillOf, &m.BackfillTicket, &attributes, &connection); err != nil {
		return queue.Match{}, err
	}
	if err := decodeMatchColumns(&m, teams, pairs, attributes); err != nil {
		return queue.Match{}, fmt.Errorf("stored match %q: %w", m.ID, err)
	}
	if connection != nil {
		m.Connection = connection
	}
	return m, nil
}

// The queue's row, for NotFound and its newest event's Seq, with up to $3 events after $2
// (NULLs when it has none). The events of a deleted queue stay readable. Each event's owner
// is looked up by its ticket's key: as a join, a read of a few hundred events was planned as
// a hash join over every ticket kept (a scan that grows with the retention: 33 ms at 18,000
// tickets).
const sqlEvents = `
SELECT q.event_seq, e.seq, e.type, e.ticket_id, e.match_id, e.team, e.reason, e.at,
       (SELECT t.owner FROM queue_tickets AS t WHERE t.id = e.ticket_id)
FROM queues AS q
LEFT JOIN LATERAL (
    SELECT * FROM queue_events
    WHERE queue = q.name AND seq > $2
    ORDER BY seq
    LIMIT $3
) AS e ON true
WHERE q.name = $1
ORDER BY e.seq`

// The tickets of up to $3 events of queue $1 after $2, as they are now: the tickets sqlEvents'
// rows name, read by key (LIMIT 1 keeps the subquery a lookup per event, never a join the
// planner could turn into a scan of every kept ticket).
const sqlEventTickets = `
SELECT ` + ticketColumns + `
FROM (
    SELECT DISTINCT ticket_id FROM (
        SELECT ticket_id FROM queue_events WHERE queue = $1 AND seq > $2 ORDER BY seq LIMIT $3
    ) AS e
) AS e
CROSS JOIN LATERAL (SELECT * FROM queue_tickets WHERE id = e.ticket_id LIMIT 1) AS t`

// Events implements queue.Store: the head alone is the queue's row; a page is sqlEvents' rows,
// and, with the tickets, sqlEventTickets' in the same round trip, each statement in its own
// snapshot. A ticket read after its events were is as new as they are, or newer; an event
// committed between the two only adds its ticket.
func (s *Store) Events(ctx context.Context, queueName string, after int64, limit int, tickets bool) (queue.EventPage, error) {
	var page queue.EventPage
	if limit <= 0 {
		err := s.pool.QueryRow(ctx, `SELECT event_seq FROM queues WHERE name = $1`, queueName).Scan(&page.Head)
		if errors.Is(err, pgx.ErrNoRows) {
			return page, noQueue(queueName)
		}
		return page, db.MapError(err, "queue: event head")
	}
	b := &pgx.Batch{}
	b.Queue(sqlEvents, queueName, after, limit).Query(func(rows pgx.Rows) (err error) {
		page.Events, page.Head, err = scanEvents(rows, queueName)
		return err
	})
	if tickets {
		b.Queue(sqlEventTickets, queueName, after, limit).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				t, err := scanTicket(rows)
				if err != nil {
					return err
				}
				page.Tickets = append(page.Tickets, t)
			}
			return rows.Err()
		})
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return queue.EventPage{}, db.MapError(err, "queue: events")
	}
	return page, nil
}

// scanEvents reads sqlEvents' rows, and the queue's head: NotFound when the queue has no row.
func scanEvents(rows pgx.Rows, queueName string) (_ []queue.Event, head int64, _ error) {
	var out []queue.Event
	found := false
	var (
		seq         *int64
		typ, ticket *string
		match       *string
		team        *int16
		reason      *string
		at          *time.Time
		owner       *string // the ticket's; NULL once purged
	)
	_, err := pgx.ForEachRow(rows, []any{&head, &seq, &typ, &ticket, &match, &team, &reason, &at, &owner}, func() error {
		found = true
		if seq == nil {
			return nil
		}
		e := queue.Event{Queue: queueName, Seq: *seq, Type: queue.EventType(*typ), TicketID: *ticket, Reason: *reason, At: *at}
		if match != nil {
			e.MatchID = *match
		}
		if team != nil {
			e.Team = int(*team)
		}
		if owner != nil {
			e.Owner = *owner
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if !found {
		return nil, 0, noQueue(queueName)
	}
	return out, head, nil
}

// WebhookCursor implements queue.Store. A leader's first read under its epoch claims the
// queue's outbox (migration 00010): from then on only its cursor writes go through. It claims
// only once the previous leader's lease has run out (that leader may still be posting,
// unaware it was deposed); until then the read fails with an error wrapping
// queue.ErrOutboxHandover.
func (s *Store) WebhookCursor(ctx context.Context, queueName string) (int64, error) {
	epoch, led := s.lead.epoch(queueName)
	if !led || epoch == lostEpoch || s.lead.claimedUnder(queueName) == epoch {
		var seq int64
		err := s.work.QueryRow(ctx, `SELECT webhook_seq FROM queues WHERE name = $1`, queueName).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, noQueue(queueName)
		}
		return seq, db.MapError(err, "queue: webhook cursor")
	}
	var seq int64
	var claimed, current bool
	var wait float64
	err := s.work.QueryRow(ctx, `
WITH claim AS (
    UPDATE queues SET webhook_epoch = $2
    WHERE name = $1 AND leader_epoch = $2 AND (webhook_handover_at IS NULL OR webhook_handover_at <= now())
    RETURNING webhook_seq)
SELECT coalesce((SELECT webhook_seq FROM claim), q.webhook_seq), EXISTS (SELECT 1 FROM claim),
    q.leader_epoch = $2, coalesce(extract(epoch FROM q.webhook_handover_at - now()), 0)::float8
FROM queues AS q WHERE q.name = $1`, queueName, epoch).Scan(&seq, &claimed, &current, &wait)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, noQueue(queueName)
	case err != nil:
		return 0, db.MapError(err, "queue: webhook cursor")
	case !current:
		return 0, deposed(queueName)
	case !claimed:
		return 0, apperr.Wrap(apperr.Unavailable, queue.ErrOutboxHandover,
			fmt.Sprintf("queue: the webhook outbox of queue %q is the previous leader's for another %v", queueName,
				time.Duration(wait*float64(time.Second)).Round(time.Millisecond)))
	}
	s.lead.claim(queueName, epoch)
	return seq, nil
}

// SetWebhookCursor implements queue.Store. The cursor never goes back: acknowledgements may
// arrive out of order. A leader's write goes through while the outbox is its own: until a
// later leader claimed it (WebhookCursor), which is after this one's lease ran out.
func (s *Store) SetWebhookCursor(ctx context.Context, queueName string, seq int64) error {
	var fenced bool
	err := s.work.QueryRow(ctx, `
UPDATE queues AS q SET webhook_seq = CASE WHEN $3::bigint IS NULL OR q.webhook_epoch = $3 THEN greatest(q.webhook_seq, $2) ELSE q.webhook_seq END
WHERE q.name = $1
RETURNING NOT ($3::bigint IS NULL OR q.webhook_epoch = $3)`, queueName, seq, s.webhookFence(queueName)).Scan(&fenced)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return noQueue(queueName)
	case err != nil:
		return db.MapError(err, "queue: set webhook cursor")
	case fenced:
		return deposed(queueName)
	}
	return nil
}

// webhookFence is the outbox condition of a cursor write: the epoch under which this process
// claimed the outbox, else its leader epoch (refused: it has not claimed it), else none (it
// never led the queue).
func (s *Store) webhookFence(queueName string) *int64 {
	if e := s.lead.claimedUnder(queueName); e != 0 {
		return &e
	}
	return s.fence(queueName)
}

// --- changes ------------------------------------------------------------------------------

// Changes reads by transaction id, not by a sequence: a sequence number is taken when a
// transaction writes, but the transaction may commit after one taken later has been read,
// and a reader that moved its cursor past the later one would never see it. Instead each
// ticket row records the transaction that last wrote it (changed_xid), and the cursor is the
// xmin of the snapshot the read ran in: every transaction below it had ended when the read
// ran, so its writes were in the read. A transaction that commits after the read was still
// running when the read's snapshot was taken (so its id is at or above that snapshot's xmin)
// or started after it (its id is higher still): the next read, of the rows written by
// transactions at or above the cursor, returns its rows whenever it commits. Rows written by
// transactions that were already committed at the read but are at or above its xmin come
// back again, which the contract allows. A transaction that stays open for long (anywhere on
// the server: xids are cluster-wide) holds the xmin back, and each read returns what was
// written since it began: more rows, never a missed one.
//
// The zero cursor reads the queue's searching tickets through queue_searching; a cursor
// reads the queue's range of queue_tickets_changes. The cursor comes from the same
// statement, so the same snapshot; a row of NULL ticket columns says only that.
const (
	sqlChangesAll = `
WITH cur AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin,
           EXISTS (SELECT 1 FROM queues WHERE name = $1) AS queue_exists
)
SELECT ` + ticketColumns + `, cur.xmin, cur.queue_exists
FROM cur
LEFT JOIN LATERAL (
    SELECT t.*
    FROM (SELECT DISTINCT ticket_id FROM queue_searching WHERE queue = $1) AS s
    JOIN queue_tickets AS t ON t.id = s.ticket_id
) AS t ON true
ORDER BY t.created_at, t.id`

	sqlChangesSince = `
WITH cur AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin,
           EXISTS (SELECT 1 FROM queues WHERE name = $1) AS queue_exists
)
SELECT ` + changesColumns + `, cur.xmin, cur.queue_exists
FROM cur
LEFT JOIN LATERAL (
    SELECT * FROM queue_tickets WHERE queue = $1 AND changed_xid >= $2::xid8
) AS t ON true
ORDER BY t.created_at, t.id`
)

// changesColumns are ticketColumns as Changes since a cursor reads them: a ticket no longer
// searching comes without its players, latencies, assignment and backfill, which its reader
// drops unread (the leader only removes the ticket from its view). Much of what a tick's
// load reads is the tickets the previous tick matched, and decoding their JSON stalled the
// creations that run beside it (docs/performance.md, "Ticket queue (issue 10)").
const changesColumns = `t.id, t.queue, t.status,
    CASE WHEN t.status = 'searching' THEN t.players ELSE '[]'::jsonb END,
    CASE WHEN t.status = 'searching' THEN t.latencies END,
    t.created_at, t.expires_at, t.updated_at, t.reason, NULL::jsonb, t.idempotency_key, t.body_hash,
    CASE WHEN t.status = 'searching' THEN t.backfill END,
    CASE WHEN t.status = 'searching' THEN t.attributes END, t.owner, NULL::jsonb, t.exclusive`

// sqlPartitionChangesAll and sqlPartitionChangesSince are the reads of one partition's
// changes: the filter is Partitions' expression of a ticket's partition (the attribute, its
// default), on the row whatever its status.
var (
	sqlPartitionChangesAll   = withFilter(sqlChangesAll, "JOIN queue_tickets AS t ON t.id = s.ticket_id", " AND coalesce(t.attributes->>$2, $3) = $4")
	sqlPartitionChangesSince = withFilter(sqlChangesSince, "changed_xid >= $2::xid8", " AND coalesce(attributes->>$3, $4) = $5")
)

// withFilter is sql with filter added after anchor. It panics (at start-up) unless anchor is
// in sql exactly once: the partition runner does not filter what it reads again, so a filter
// lost to an edit of the read would hand one partition another's tickets.
func withFilter(sql, anchor, filter string) string {
	if strings.Count(sql, anchor) != 1 {
		panic(fmt.Sprintf("queuedb: the partition filter's anchor %q is not in its read exactly once", anchor))
	}
	return strings.Replace(sql, anchor, anchor+filter, 1)
}

// Changes implements queue.Store.
func (s *Store) Changes(ctx context.Context, q queue.Queue, part string, since queue.Cursor) ([]queue.Ticket, queue.Cursor, error) {
	switch {
	case part == "" && since == 0:
		return s.changes(ctx, q.Name, since, sqlChangesAll, q.Name)
	case part == "":
		return s.changes(ctx, q.Name, since, sqlChangesSince, q.Name, uint64(since))
	}
	def := ""
	if d := q.Attributes[q.PartitionBy].Default; d != nil {
		def = d.Str
	}
	if since == 0 {
		return s.changes(ctx, q.Name, since, sqlPartitionChangesAll, q.Name, q.PartitionBy, def, part)
	}
	return s.changes(ctx, q.Name, since, sqlPartitionChangesSince, q.Name, uint64(since), q.PartitionBy, def, part)
}

// changes runs one of the reads of changes with its arguments.
func (s *Store) changes(ctx context.Context, queueName string, since queue.Cursor, sql string, args ...any) ([]queue.Ticket, queue.Cursor, error) {
	rows, err := s.work.Query(ctx, sql, args...)
	if err != nil {
		return nil, since, db.MapError(err, "queue: changes")
	}
	defer rows.Close()
	var out []queue.Ticket
	var xmin uint64
	var exists bool
	for rows.Next() {
		if rows.RawValues()[0] == nil { // no ticket: only the cursor
			dst := make([]any, len(rows.FieldDescriptions()))
			dst[len(dst)-2], dst[len(dst)-1] = &xmin, &exists
			if err := rows.Scan(dst...); err != nil {
				return nil, since, db.MapError(err, "queue: changes")
			}
			continue
		}
		t, err := scanTicket(rows, &xmin, &exists)
		if err != nil {
			return nil, since, db.MapError(err, "queue: changes")
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, since, db.MapError(err, "queue: changes")
	}
	if !exists {
		return nil, since, noQueue(queueName)
	}
	return out, queue.Cursor(xmin), nil
}
