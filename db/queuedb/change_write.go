package queuedb

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The statements that write a change (change.go), in the order write sends them. Each
// checks that it wrote a row per thing it was given.
const (
	sqlInsertMatches = `
INSERT INTO queue_matches (id, queue, created_at, region, teams, pairs, skill_difference, average_difference,
                           backfill_of, backfill_ticket, attributes, connection)
SELECT u.id, u.queue, u.created_at, u.region, u.teams::jsonb, u.pairs::jsonb, u.skill, u.average,
       nullif(u.backfill_of, ''), nullif(u.backfill_ticket, ''), u.attributes::jsonb, u.connection::jsonb
FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::float8[],
            $9::text[], $10::text[], $11::text[], $12::text[])
    AS u(id, queue, created_at, region, teams, pairs, skill, average, backfill_of, backfill_ticket, attributes, connection)`

	sqlInsertProposals = `
INSERT INTO queue_proposals (id, queue, created_at, accept_by, region, teams, pairs, skill_difference,
                             average_difference, attributes, answers, state, place_for)
SELECT u.id, u.queue, u.created_at, u.accept_by, u.region, u.teams::jsonb, u.pairs::jsonb, u.skill, u.average,
       u.attributes::jsonb, '{}', u.state, u.place_for
FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[], $7::text[],
            $8::float8[], $9::float8[], $10::text[], $11::text[], $12::interval[])
    AS u(id, queue, created_at, accept_by, region, teams, pairs, skill, average, attributes, state, place_for)`

	sqlUpdateProposals = `
UPDATE queue_proposals AS p
SET answers = u.answers::jsonb, state = u.state, accept_by = u.accept_by, resolved_at = u.resolved_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[])
    AS u(id, answers, state, accept_by, resolved_at)
WHERE p.id = u.id`

	// The tickets are found by the address (ctid) of the rows the transaction locked, which
	// stays theirs while it holds the lock: one direct read per ticket, whatever the planner
	// thinks of the table's size (a join on id was planned as a scan of the whole table while
	// its statistics were behind). Each must still be where the lifecycle found it.
	sqlMoveTickets = `
UPDATE queue_tickets AS t
SET status = u.status, reason = u.reason, assignment = u.assignment::jsonb, proposal = u.proposal::jsonb,
    updated_at = $2, changed_xid = pg_current_xact_id()
FROM unnest($1::tid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
    AS u(row, from_status, status, reason, assignment, proposal)
WHERE t.ctid = u.row AND t.status = u.from_status`

	// The players of the tickets that ended ($2, of the queues $1) may search again. A
	// ticket's rows are found by its queue and id (queue_searching_ticket, migration 00022),
	// in one scan of the index for every pair: a ticket's rows are in its queue alone. (Joined
	// to the pairs, each was a descent of the index: 3 pages a ticket in the soak, against 1.3
	// by the ticket alone before.)
	sqlEndSearching = `DELETE FROM queue_searching WHERE queue = ANY($1::text[]) AND ticket_id = ANY($2::text[])`

	sqlPlaceMatch   = `UPDATE queue_matches SET connection = $2::jsonb WHERE id = $1`
	sqlPlaceTickets = `
UPDATE queue_tickets AS t SET assignment = jsonb_set(t.assignment, '{connection}', $2::jsonb)
WHERE t.ctid = ANY($1::tid[]) AND t.status = 'matched'`

	// The events take the queue's next numbers: the row stays locked until COMMIT, so the
	// events of two transactions are numbered in the order they commit, and a reader that
	// has seen Seq n has seen every event up to n.
	sqlAppendEvents = `
WITH seq AS (
    UPDATE queues SET event_seq = event_seq + cardinality($2::text[])
    WHERE name = $1
    RETURNING event_seq - cardinality($2::text[]) AS base
)
INSERT INTO queue_events (queue, seq, type, ticket_id, match_id, team, reason, at)
SELECT $1, seq.base + e.n, e.type, e.ticket_id, nullif(e.match_id, ''),
       CASE WHEN e.type IN ('matched', 'proposed', 'placed') THEN e.team END, e.reason, $7
FROM seq, unnest($2::text[], $3::text[], $4::text[], $5::int[], $6::text[]) WITH ORDINALITY
    AS e(ticket_id, type, match_id, team, reason, n)`

	// Delivered at COMMIT to every replica's listener (notify.go), with the queue's last
	// Seq as this transaction leaves it.
	sqlNotify = `SELECT pg_notify('` + eventsChannel + `', name || ' ' || event_seq) FROM queues WHERE name = $1`
)

// write queues c's statements on b.
func (ch *change) write(b *pgx.Batch, c queue.Change) error {
	if err := queueMatches(b, c.Matches); err != nil {
		return err
	}
	if err := queueNewProposals(b, c.NewProposals); err != nil {
		return err
	}
	if err := queueProposalUpdates(b, c.Proposals); err != nil {
		return err
	}
	if err := ch.queueMoves(b, c); err != nil {
		return err
	}
	if pl := c.Placement; pl != nil {
		rows := make([]pgtype.TID, len(pl.Tickets))
		for i, id := range pl.Tickets {
			rows[i] = ch.rows[id].at
		}
		b.Queue(sqlPlaceMatch, pl.Match, string(pl.Connection)).Exec(rowsWere(1, "matches placed"))
		b.Queue(sqlPlaceTickets, rows, string(pl.Connection)).Exec(rowsWere(int64(len(rows)), "tickets placed"))
	}
	queueClaims(b, c.Claims)
	queueEvents(b, c)
	return queueStanding(b, c)
}

// queueMatches inserts the matches made.
func queueMatches(b *pgx.Batch, ms []queue.Match) error {
	if len(ms) == 0 {
		return nil
	}
	n := len(ms)
	ids, queues, regions, teams, pairs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	backfillOf, backfillTicket, attrs, conns := make([]string, n), make([]string, n), make([]*string, n), make([]*string, n)
	created, skill, average := make([]pgtype.Timestamptz, n), make([]float64, n), make([]float64, n)
	for i, m := range ms {
		row, err := newMatchRow(m)
		if err != nil {
			return apperr.Wrap(apperr.Invalid, err, "queue: match "+m.ID+" cannot be stored")
		}
		ids[i], queues[i], regions[i], teams[i], pairs[i] = m.ID, m.Queue, m.Region, row.teams, row.pairs
		backfillOf[i], backfillTicket[i], attrs[i] = m.BackfillOf, m.BackfillTicket, row.attributes
		created[i] = pgtype.Timestamptz{Time: m.CreatedAt, Valid: true}
		skill[i], average[i] = m.SkillDifference, m.AverageDifference
		if m.Connection != nil {
			conns[i] = new(string(m.Connection))
		}
	}
	b.Queue(sqlInsertMatches, ids, queues, created, regions, teams, pairs, skill, average, backfillOf, backfillTicket, attrs, conns).
		Exec(rowsWere(int64(n), "matches stored"))
	return nil
}

// queueNewProposals inserts the proposals made.
func queueNewProposals(b *pgx.Batch, ps []queue.Proposal) error {
	if len(ps) == 0 {
		return nil
	}
	n := len(ps)
	ids, queues, regions, teams, pairs, states := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attrs, created, acceptBy := make([]*string, n), make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
	skill, average, placeFor := make([]float64, n), make([]float64, n), make([]pgtype.Interval, n)
	for i, p := range ps {
		m := &p.Match
		row, err := newMatchRow(*m)
		if err != nil {
			return apperr.Wrap(apperr.Invalid, err, "queue: proposal "+m.ID+" cannot be stored")
		}
		ids[i], queues[i], regions[i], teams[i], pairs[i], states[i] = m.ID, m.Queue, m.Region, row.teams, row.pairs, string(p.State)
		attrs[i], skill[i], average[i] = row.attributes, m.SkillDifference, m.AverageDifference
		created[i], acceptBy[i] = pgtype.Timestamptz{Time: m.CreatedAt, Valid: true}, pgtype.Timestamptz{Time: p.AcceptBy, Valid: true}
		placeFor[i] = pgtype.Interval{Microseconds: p.PlaceFor.Microseconds(), Valid: true}
	}
	b.Queue(sqlInsertProposals, ids, queues, created, acceptBy, regions, teams, pairs, skill, average, attrs, states, placeFor).
		Exec(rowsWere(int64(n), "proposals stored"))
	return nil
}

// queueProposalUpdates writes the proposals' answers, states and deadlines as they now are.
func queueProposalUpdates(b *pgx.Batch, ps []queue.Proposal) error {
	if len(ps) == 0 {
		return nil
	}
	n := len(ps)
	ids, answers, states := make([]string, n), make([]string, n), make([]string, n)
	acceptBy, resolved := make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
	for i, p := range ps {
		a, err := json.Marshal(p.Answers)
		if err != nil {
			return err
		}
		ids[i], answers[i], states[i] = p.Match.ID, string(a), string(p.State)
		acceptBy[i] = pgtype.Timestamptz{Time: p.AcceptBy, Valid: true}
		resolved[i] = pgtype.Timestamptz{Time: p.ResolvedAt, Valid: !p.ResolvedAt.IsZero()}
	}
	b.Queue(sqlUpdateProposals, ids, answers, states, acceptBy, resolved).Exec(rowsWere(int64(n), "proposals updated"))
	return nil
}

// queueMoves writes the tickets' transitions, and frees the players of those that ended.
func (ch *change) queueMoves(b *pgx.Batch, c queue.Change) error {
	if len(c.Transitions) == 0 {
		return nil
	}
	n := len(c.Transitions)
	rows, from, to, reasons := make([]pgtype.TID, n), make([]string, n), make([]string, n), make([]string, n)
	assignments, proposals := make([]*string, n), make([]*string, n)
	var endedQueues, ended []string
	for i, tr := range c.Transitions {
		row := ch.rows[tr.Ticket]
		rows[i], from[i], to[i], reasons[i] = row.at, string(tr.From), string(tr.To), tr.Reason
		if tr.Assignment != nil {
			doc, err := json.Marshal(newAssignmentJSON(*tr.Assignment))
			if err != nil {
				return err
			}
			assignments[i] = new(string(doc))
		}
		if tr.Proposal != nil {
			doc, err := json.Marshal(newTicketProposalJSON(tr.Proposal))
			if err != nil {
				return err
			}
			proposals[i] = new(string(doc))
		}
		if tr.Ends() {
			endedQueues, ended = append(endedQueues, row.queue), append(ended, tr.Ticket)
		}
	}
	b.Queue(sqlMoveTickets, rows, c.At, from, to, reasons, assignments, proposals).Exec(rowsWere(int64(n), "tickets moved"))
	if len(ended) > 0 {
		b.Queue(sqlEndSearching, endedQueues, ended)
	}
	return nil
}

// queueEvents appends the change's events, each queue's in their order, and notifies the
// replicas of each queue.
func queueEvents(b *pgx.Batch, c queue.Change) {
	for start := 0; start < len(c.Events); {
		q := c.Events[start].Queue
		end := start
		var ids, types, matchIDs, reasons []string
		var teams []int32
		for ; end < len(c.Events) && c.Events[end].Queue == q; end++ {
			e := c.Events[end]
			ids, types, matchIDs = append(ids, e.TicketID), append(types, string(e.Type)), append(matchIDs, e.MatchID)
			teams, reasons = append(teams, int32(e.Team)), append(reasons, e.Reason)
		}
		b.Queue(sqlAppendEvents, q, ids, types, matchIDs, teams, reasons, c.At).Exec(rowsWere(int64(end-start), "events appended"))
		b.Queue(sqlNotify, q)
		start = end
	}
}

// rowsWere checks a statement's row count.
func rowsWere(want int64, what string) func(pgconn.CommandTag) error {
	return func(tag pgconn.CommandTag) error {
		if got := tag.RowsAffected(); got != want {
			return fmt.Errorf("db: %d %s, want %d", got, what, want)
		}
		return nil
	}
}
