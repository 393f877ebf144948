package queuedb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The ready checks (queue/acceptance.go) on Postgres. Every transaction that changes a
// proposal or its tickets takes the queue's row first (FOR NO KEY UPDATE, as a tick's commit
// and a cancel do), then the proposal's row, then the tickets in the order of their ids: the
// writers of one queue's events queue on its row, so they never deadlock on the others. A
// proposal's state leaves open once, in the transaction that holds its row and sees it open:
// an answer on one replica and the leader's expiry on another cannot both resolve it.

const proposalColumns = `p.id, p.queue, p.created_at, p.accept_by, p.region, p.teams, p.pairs, p.skill_difference,
    p.average_difference, p.attributes, p.answers, p.state, p.resolved_at, p.place_for`

const (
	sqlInsertProposals = `
INSERT INTO queue_proposals (id, queue, created_at, accept_by, region, teams, pairs, skill_difference,
                             average_difference, attributes, state, place_for)
SELECT u.id, $1, $2, $3, u.region, u.teams::jsonb, u.pairs::jsonb, u.skill, u.average, u.attributes::jsonb, $11, $12
FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::float8[], $9::float8[], $10::text[])
    AS u(id, region, teams, pairs, skill, average, attributes)`

	sqlProposeTickets = `
UPDATE queue_tickets AS t
SET status = $4, proposal = u.proposal::jsonb, updated_at = $2, changed_xid = pg_current_xact_id()
FROM unnest($1::tid[], $3::text[]) AS u(row, proposal)
WHERE t.ctid = u.row AND t.status = 'searching'`

	sqlRequeueTickets = `
UPDATE queue_tickets AS t
SET status = 'searching', proposal = NULL, updated_at = $2, changed_xid = pg_current_xact_id()
WHERE t.ctid = ANY($1::tid[]) AND t.status IN ('proposed', 'placing')`

	// Every player accepted: the allocator places the match until $3.
	sqlPlaceTickets = `
UPDATE queue_tickets AS t
SET status = 'placing', proposal = jsonb_set(t.proposal, '{accept_by}', to_jsonb($3::timestamptz)), updated_at = $2,
    changed_xid = pg_current_xact_id()
WHERE t.ctid = ANY($1::tid[]) AND t.status = 'proposed'`

	sqlUpdateProposals = `
UPDATE queue_proposals AS p
SET answers = u.answers::jsonb, state = u.state, accept_by = u.accept_by,
    resolved_at = CASE WHEN u.state IN ('open', 'placing') THEN NULL ELSE $2::timestamptz END
FROM unnest($1::text[], $3::text[], $4::text[], $5::timestamptz[]) AS u(id, answers, state, accept_by)
WHERE p.id = u.id`

	sqlStoreAcceptedMatches = `
INSERT INTO queue_matches (id, queue, created_at, region, teams, pairs, skill_difference, average_difference, attributes,
                           connection)
SELECT id, queue, $2, region, teams, pairs, skill_difference, average_difference, attributes, $3::jsonb
FROM queue_proposals WHERE id = ANY($1::text[])`

	// The tickets of proposals, locked in the order of their ids (the caller sorts them), with
	// the proposal each is proposed in.
	sqlLockProposalTickets = `
SELECT t.ctid, t.id, t.status, coalesce(t.proposal->>'match_id', '')
FROM unnest($1::text[]) AS u(id)
CROSS JOIN LATERAL (
    SELECT ctid, id, status, proposal FROM queue_tickets WHERE id = u.id FOR UPDATE
) AS t`
)

// Propose implements queue.ProposalStore: one transaction in two round trips, as CommitTick.
func (s *Store) Propose(ctx context.Context, queueName string, w queue.ProposeWrite) (queue.TickCommitted, error) {
	var ids []string
	for _, m := range w.Proposals {
		ids = append(ids, m.Tickets()...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rows := make([]matchRow, len(w.Proposals))
	for i, m := range w.Proposals {
		var err error
		if rows[i], err = newMatchRow(m); err != nil {
			return queue.TickCommitted{}, apperr.Wrap(apperr.Invalid, err, "queue: proposal "+m.ID+" cannot be stored")
		}
	}
	at, acceptBy := w.At.Truncate(time.Microsecond), w.AcceptBy.Truncate(time.Microsecond)
	var done queue.TickCommitted
	err := db.InTx(ctx, s.work, "queue: propose", func(conn *pgxpool.Conn) error {
		done = queue.TickCommitted{}
		found, epoch, searching, err := s.lockForTick(ctx, conn, queueName, ids)
		if err != nil {
			return err
		}
		if !found {
			return noQueue(queueName)
		}
		if mine := s.fence(queueName); mine != nil && *mine != epoch {
			return deposed(queueName)
		}
		var (
			pids, regions, teams, pairs, docs, evIDs, evTypes, evMatch, evReasons []string
			attrs                                                                 []*string
			skill, average                                                        []float64
			ticketRows                                                            []pgtype.TID
			evTeams                                                               []int32
		)
		for i, m := range w.Proposals {
			tickets := m.Tickets()
			if len(tickets) == 0 || m.BackfillOf != "" || slices.ContainsFunc(tickets, func(id string) bool { _, ok := searching[id]; return !ok }) {
				done.Dropped = append(done.Dropped, m.ID)
				continue
			}
			for _, id := range tickets {
				tp := queue.NewTicketProposal(m, id, acceptBy)
				b, err := json.Marshal(newTicketProposalJSON(tp))
				if err != nil {
					return err
				}
				ticketRows, docs = append(ticketRows, searching[id]), append(docs, string(b))
				evIDs, evTypes, evMatch = append(evIDs, id), append(evTypes, string(queue.EventProposed)), append(evMatch, m.ID)
				evTeams, evReasons = append(evTeams, int32(tp.Team)), append(evReasons, "")
				delete(searching, id)
			}
			pids, regions, teams, pairs = append(pids, m.ID), append(regions, m.Region), append(teams, rows[i].teams), append(pairs, rows[i].pairs)
			skill, average, attrs = append(skill, m.SkillDifference), append(average, m.AverageDifference), append(attrs, rows[i].attributes)
			done.Matches = append(done.Matches, m.ID)
		}
		if len(pids) == 0 {
			return nil // rolled back
		}
		b := &pgx.Batch{}
		state, status := queue.ProposalOpen, queue.Proposed
		if w.Placing {
			state, status = queue.ProposalPlacing, queue.Placing
		}
		b.Queue(sqlInsertProposals, queueName, at, acceptBy, pids, regions, teams, pairs, skill, average, attrs, string(state), w.PlaceFor).
			Exec(rowsWere(int64(len(pids)), "proposals stored"))
		b.Queue(sqlProposeTickets, ticketRows, at, docs, string(status)).Exec(rowsWere(int64(len(ticketRows)), "tickets proposed"))
		if !w.Placing { // a placement has no event until it ends
			b.Queue(sqlAppendEvents, queueName, evIDs, evTypes, evMatch, evTeams, evReasons, at).
				Exec(rowsWere(int64(len(evIDs)), "events appended"))
			b.Queue(sqlNotify, queueName)
		}
		b.Queue("COMMIT")
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return db.Committed(conn)
	})
	if err != nil {
		return queue.TickCommitted{}, err
	}
	return done, nil
}

// lockForTick begins a transaction on conn, locks the queue's row (reading its leader epoch)
// and the tickets ids of the queue, and returns those searching, with their rows.
func (s *Store) lockForTick(ctx context.Context, conn *pgxpool.Conn, queueName string, ids []string) (found bool, epoch int64, searching map[string]pgtype.TID, err error) {
	searching = make(map[string]pgtype.TID, len(ids))
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sqlLockQueue, queueName).Query(scanIfAny(&found, &epoch))
	b.Queue(sqlLockTickets, ids, queueName).Query(func(rows pgx.Rows) error {
		var row pgtype.TID
		var id, status string
		_, err := pgx.ForEachRow(rows, []any{&row, &id, &status}, func() error {
			if status == string(queue.Searching) {
				searching[id] = row
			}
			return nil
		})
		return err
	})
	err = conn.SendBatch(ctx, b).Close()
	return found, epoch, searching, err
}

// GetProposal implements queue.ProposalStore.
func (s *Store) GetProposal(ctx context.Context, id string) (queue.Proposal, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+proposalColumns+` FROM queue_proposals AS p WHERE p.id = $1`, id)
	if err != nil {
		return queue.Proposal{}, db.MapError(err, "queue: get proposal")
	}
	ps, err := collectProposals(rows)
	if err != nil {
		return queue.Proposal{}, db.MapError(err, "queue: get proposal")
	}
	if len(ps) == 0 {
		return queue.Proposal{}, apperr.New(apperr.NotFound, "no proposal %q", id)
	}
	return ps[0], nil
}

// AnswerProposal implements queue.ProposalStore: the queue's row and the proposal's locked
// in the first round trip; an answer that leaves it open is written with COMMIT in the
// second; one that resolves it locks its tickets and then writes the outcome.
func (s *Store) AnswerProposal(ctx context.Context, id, playerID string, accept bool, at time.Time) (queue.Proposal, bool, error) {
	at = at.Truncate(time.Microsecond)
	var p queue.Proposal
	var resolved bool
	err := db.InTx(ctx, s.pool, "queue: answer proposal", func(conn *pgxpool.Conn) error {
		resolved = false
		ps, err := lockProposal(ctx, conn, id)
		if err != nil {
			return err
		}
		if len(ps) == 0 {
			return apperr.New(apperr.NotFound, "no proposal %q", id)
		}
		p = ps[0]
		if !proposalHas(p, playerID) {
			return apperr.New(apperr.NotFound, "no player %q in the proposal of match %q", playerID, id)
		}
		if p.State != queue.ProposalOpen {
			return apperr.New(apperr.Conflict, "the proposal of match %q is %s: it takes no more answers", id, p.State)
		}
		p.Answers[playerID] = accept
		o, done := p.Outcome(false, "")
		if !done {
			b := &pgx.Batch{}
			if err := queueProposalUpdates(b, at, p); err != nil {
				return err
			}
			b.Queue("COMMIT")
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			return db.Committed(conn)
		}
		p.State, p.ResolvedAt, resolved = o.State, at, true
		if o.State == queue.ProposalPlacing {
			p.ResolvedAt, p.AcceptBy = time.Time{}, at.Add(p.PlaceFor)
		}
		return s.resolve(ctx, conn, p.Match.Queue, at, []queue.Proposal{p}, []queue.ProposalOutcome{o}, nil)
	})
	if err != nil {
		return queue.Proposal{}, false, err
	}
	return p, resolved, nil
}

// ExpireProposals implements queue.ProposalStore: fenced as the leader's other writes.
func (s *Store) ExpireProposals(ctx context.Context, queueName string, at time.Time) ([]queue.Proposal, int, error) {
	at = at.Truncate(time.Microsecond)
	var out []queue.Proposal
	var open, due int
	// Most ticks have nothing due: one read without a lock or a transaction says so.
	err := s.work.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE accept_by > $2), count(*) FILTER (WHERE accept_by <= $2)
FROM queue_proposals WHERE queue = $1 AND state IN ('open', 'placing')`, queueName, at).Scan(&open, &due)
	if err != nil || due == 0 {
		return nil, open, db.MapError(err, "queue: expire proposals")
	}
	err = db.InTx(ctx, s.work, "queue: expire proposals", func(conn *pgxpool.Conn) error {
		out, open = nil, 0
		var found bool
		var epoch int64
		var ps []queue.Proposal
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(sqlLockQueue, queueName).Query(scanIfAny(&found, &epoch))
		b.Queue(`SELECT count(*) FROM queue_proposals WHERE queue = $1 AND state IN ('open', 'placing') AND accept_by > $2`, queueName, at).
			QueryRow(func(row pgx.Row) error { return row.Scan(&open) })
		b.Queue(`SELECT `+proposalColumns+` FROM queue_proposals AS p
WHERE p.queue = $1 AND p.state IN ('open', 'placing') AND p.accept_by <= $2 ORDER BY p.id FOR UPDATE`, queueName, at).Query(func(rows pgx.Rows) error {
			var err error
			ps, err = collectProposals(rows)
			return err
		})
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if !found {
			return noQueue(queueName)
		}
		if mine := s.fence(queueName); mine != nil && *mine != epoch {
			return deposed(queueName)
		}
		if len(ps) == 0 {
			return nil // rolled back
		}
		outcomes := make([]queue.ProposalOutcome, len(ps))
		for i := range ps {
			if ps[i].State == queue.ProposalPlacing {
				outcomes[i] = queue.ProposalOutcome{State: queue.ProposalFailed, Reason: queue.ReasonPlacementTimeout}
			} else {
				outcomes[i], _ = ps[i].Outcome(true, "")
			}
			ps[i].State, ps[i].ResolvedAt = outcomes[i].State, at
		}
		if err := s.resolve(ctx, conn, queueName, at, ps, outcomes, nil); err != nil {
			return err
		}
		out = ps
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, open, nil
}

// dissolve ends the proposal of t, a proposed ticket that is being cancelled: conn's
// transaction holds t's queue's row and t's row (at row). t is cancelled with reason and the
// proposal's other tickets go back to searching; the transaction is committed.
func (s *Store) dissolve(ctx context.Context, conn *pgxpool.Conn, t *queue.Ticket, row pgtype.TID, at time.Time, reason string) error {
	at = at.Truncate(time.Microsecond)
	var ps []queue.Proposal
	rows, err := conn.Query(ctx, `SELECT `+proposalColumns+` FROM queue_proposals AS p WHERE p.id = $1 FOR UPDATE`, t.Proposal.MatchID)
	if err == nil {
		ps, err = collectProposals(rows)
	}
	if err != nil {
		return err
	}
	if len(ps) == 0 || ps[0].State != queue.ProposalOpen {
		return fmt.Errorf("db: ticket %q is proposed in match %q, which is not an open proposal", t.ID, t.Proposal.MatchID)
	}
	p := ps[0]
	o, _ := p.Outcome(false, t.ID)
	o.Cancel[t.ID] = reason
	p.State, p.ResolvedAt = o.State, at
	if err := s.resolve(ctx, conn, t.Queue, at, []queue.Proposal{p}, []queue.ProposalOutcome{o}, nil); err != nil {
		return err
	}
	t.Status, t.Reason, t.UpdatedAt, t.Proposal = queue.Cancelled, reason, at, nil
	return nil
}

// resolve writes resolved proposals of one queue and their outcomes, and commits: conn's
// transaction holds the queue's row and the proposals'. It locks their tickets, and changes
// those still proposed in them: an accepted proposal's match is stored and its tickets
// matched; the others' tickets cancelled or requeued; each with its event.
func (s *Store) resolve(ctx context.Context, conn *pgxpool.Conn, queueName string, at time.Time, ps []queue.Proposal, outcomes []queue.ProposalOutcome, connection json.RawMessage) error {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.Match.Tickets()...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	type locked struct {
		row    pgtype.TID
		status string
		in     string // the proposal it is proposed in
	}
	tickets := make(map[string]locked, len(ids))
	rows, err := conn.Query(ctx, sqlLockProposalTickets, ids)
	if err != nil {
		return err
	}
	var l locked
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&l.row, &id, &l.status, &l.in}, func() error {
		tickets[id] = l
		return nil
	}); err != nil {
		return err
	}
	f := finish{queue: queueName, at: at}
	var requeue, placing []pgtype.TID
	var placeBy time.Time
	var evIDs, evTypes, evMatch, evReasons, accepted []string
	var evTeams []int32
	for i, p := range ps {
		o := outcomes[i]
		inIt := func(id string) (locked, bool) {
			t, ok := tickets[id]
			return t, ok && (t.status == string(queue.Proposed) || t.status == string(queue.Placing)) && t.in == p.Match.ID
		}
		if o.State == queue.ProposalPlacing {
			for _, id := range p.Match.Tickets() {
				if t, ok := inIt(id); ok {
					placing = append(placing, t.row)
				}
			}
			placeBy = p.AcceptBy
			continue
		}
		if o.State == queue.ProposalAccepted {
			accepted = append(accepted, p.Match.ID)
			assigned := queue.Assignments(p.Match)
			for _, id := range p.Match.Tickets() {
				if t, ok := inIt(id); ok {
					a := assigned[id]
					a.Connection = connection
					if err := f.add(t.row, id, queue.Matched, "", &a); err != nil {
						return err
					}
				}
			}
			continue
		}
		for _, id := range p.Match.Tickets() {
			t, ok := inIt(id)
			if !ok {
				continue
			}
			if reason, cancel := o.Cancel[id]; cancel {
				if err := f.add(t.row, id, queue.Cancelled, reason, nil); err != nil {
					return err
				}
				continue
			}
			requeue = append(requeue, t.row)
			evIDs, evTypes, evMatch = append(evIDs, id), append(evTypes, string(queue.EventRequeued)), append(evMatch, p.Match.ID)
			evTeams, evReasons = append(evTeams, 0), append(evReasons, o.Reason)
		}
	}
	b := &pgx.Batch{}
	if err := queueProposalUpdates(b, at, ps...); err != nil {
		return err
	}
	if len(accepted) > 0 {
		var doc *string
		if connection != nil {
			doc = new(string(connection))
		}
		b.Queue(sqlStoreAcceptedMatches, accepted, at, doc).Exec(rowsWere(int64(len(accepted)), "matches stored"))
	}
	if len(placing) > 0 {
		b.Queue(sqlPlaceTickets, placing, at, placeBy).Exec(rowsWere(int64(len(placing)), "tickets placing"))
	}
	if len(f.ids) > 0 {
		f.write(b)
	}
	if len(requeue) > 0 {
		b.Queue(sqlRequeueTickets, requeue, at).Exec(rowsWere(int64(len(requeue)), "tickets requeued"))
		b.Queue(sqlAppendEvents, queueName, evIDs, evTypes, evMatch, evTeams, evReasons, at).
			Exec(rowsWere(int64(len(evIDs)), "events appended"))
		b.Queue(sqlNotify, queueName)
	}
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return db.Committed(conn)
}

// queueProposalUpdates adds the statement that writes ps' answers and states to b.
func queueProposalUpdates(b *pgx.Batch, at time.Time, ps ...queue.Proposal) error {
	ids, answers, states := make([]string, len(ps)), make([]string, len(ps)), make([]string, len(ps))
	acceptBy := make([]time.Time, len(ps))
	for i, p := range ps {
		a, err := json.Marshal(p.Answers)
		if err != nil {
			return err
		}
		ids[i], answers[i], states[i], acceptBy[i] = p.Match.ID, string(a), string(p.State), p.AcceptBy
	}
	b.Queue(sqlUpdateProposals, ids, at, answers, states, acceptBy).Exec(rowsWere(int64(len(ps)), "proposals updated"))
	return nil
}

// collectProposals reads rows of proposalColumns.
func collectProposals(rows pgx.Rows) ([]queue.Proposal, error) {
	var out []queue.Proposal
	for rows.Next() {
		var p queue.Proposal
		var teams, pairs, attributes, answers []byte
		var state string
		var resolved *time.Time
		m := &p.Match
		if err := rows.Scan(&m.ID, &m.Queue, &m.CreatedAt, &p.AcceptBy, &m.Region, &teams, &pairs, &m.SkillDifference,
			&m.AverageDifference, &attributes, &answers, &state, &resolved, &p.PlaceFor); err != nil {
			rows.Close()
			return nil, err
		}
		if err := decodeMatchColumns(m, teams, pairs, attributes); err != nil {
			rows.Close()
			return nil, fmt.Errorf("stored proposal %q: %w", m.ID, err)
		}
		if err := json.Unmarshal(answers, &p.Answers); err != nil {
			rows.Close()
			return nil, fmt.Errorf("stored answers of proposal %q: %w", m.ID, err)
		}
		if p.Answers == nil {
			p.Answers = map[string]bool{}
		}
		p.State = queue.ProposalState(state)
		if resolved != nil {
			p.ResolvedAt = *resolved
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// decodeMatchColumns reads a match's JSON columns (of queue_matches or queue_proposals).
func decodeMatchColumns(m *queue.Match, teams, pairs, attributes []byte) error {
	var ts []matchTeamJSON
	var ps []pairJSON
	if err := json.Unmarshal(teams, &ts); err != nil {
		return fmt.Errorf("teams: %w", err)
	}
	if err := json.Unmarshal(pairs, &ps); err != nil {
		return fmt.Errorf("pairs: %w", err)
	}
	for _, t := range ts {
		mt := queue.MatchTeam{RatingTotal: t.RatingTotal, Players: make([]queue.MatchPlayer, len(t.Players)),
			Name: t.Name, Roles: t.Roles, OpenSlots: t.OpenSlots}
		for i, p := range t.Players {
			mt.Players[i] = queue.MatchPlayer(p)
		}
		m.Teams = append(m.Teams, mt)
	}
	for _, p := range ps {
		m.Pairs = append(m.Pairs, queue.Pair(p))
	}
	if attributes != nil {
		var as []matchAttributeJSON
		if err := json.Unmarshal(attributes, &as); err != nil {
			return fmt.Errorf("attributes: %w", err)
		}
		m.Attributes = matchAttributes(as)
	}
	return nil
}

func proposalHas(p queue.Proposal, playerID string) bool {
	for _, t := range p.Match.Teams {
		for _, pl := range t.Players {
			if pl.ID == playerID {
				return true
			}
		}
	}
	return false
}

// ticketProposalJSON is a proposed ticket's proposal column, named as the API's fields.
type ticketProposalJSON struct {
	MatchID    string               `json:"match_id"`
	Team       int                  `json:"team"`
	Region     string               `json:"region"`
	Teams      [][]string           `json:"teams"`
	AcceptBy   time.Time            `json:"accept_by"`
	Attributes []matchAttributeJSON `json:"attributes,omitempty"`
}

func newTicketProposalJSON(p *queue.TicketProposal) ticketProposalJSON {
	return ticketProposalJSON{MatchID: p.MatchID, Team: p.Team, Region: p.Region, Teams: p.Teams, AcceptBy: p.AcceptBy,
		Attributes: matchAttributesJSON(p.Attributes)}
}

func readTicketProposal(b []byte) (*queue.TicketProposal, error) {
	if b == nil {
		return nil, nil
	}
	var j ticketProposalJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, err
	}
	return &queue.TicketProposal{MatchID: j.MatchID, Team: j.Team, Region: j.Region, Teams: j.Teams, AcceptBy: j.AcceptBy,
		Attributes: matchAttributes(j.Attributes)}, nil
}

// acceptanceTimeout is a queue's acceptance_timeout column: NULL without a ready check.
func acceptanceTimeout(q queue.Queue) *time.Duration {
	if q.Acceptance == nil {
		return nil
	}
	return &q.Acceptance.Timeout
}

// PlacingProposals implements queue.AllocatorStore.
func (s *Store) PlacingProposals(ctx context.Context, queueName string) ([]queue.Proposal, error) {
	rows, err := s.work.Query(ctx, `SELECT `+proposalColumns+` FROM queue_proposals AS p
WHERE p.queue = $1 AND p.state = 'placing' ORDER BY p.id`, queueName)
	if err != nil {
		return nil, db.MapError(err, "queue: placing proposals")
	}
	ps, err := collectProposals(rows)
	return ps, db.MapError(err, "queue: placing proposals")
}

// CompletePlacement implements queue.AllocatorStore.
func (s *Store) CompletePlacement(ctx context.Context, id string, connection json.RawMessage, at time.Time) (queue.Proposal, error) {
	return s.endPlacement(ctx, id, at, queue.ProposalOutcome{State: queue.ProposalAccepted}, connection)
}

// FailPlacement implements queue.AllocatorStore.
func (s *Store) FailPlacement(ctx context.Context, id, reason string, at time.Time) (queue.Proposal, error) {
	return s.endPlacement(ctx, id, at, queue.ProposalOutcome{State: queue.ProposalFailed, Reason: reason}, nil)
}

// endPlacement resolves placing proposal id with o: the queue's row and the proposal's
// locked, then its tickets, as an answer's.
func (s *Store) endPlacement(ctx context.Context, id string, at time.Time, o queue.ProposalOutcome, connection json.RawMessage) (queue.Proposal, error) {
	at = at.Truncate(time.Microsecond)
	var p queue.Proposal
	err := db.InTx(ctx, s.pool, "queue: end placement", func(conn *pgxpool.Conn) error {
		ps, err := lockProposal(ctx, conn, id)
		if err != nil {
			return err
		}
		switch {
		case len(ps) == 0:
			return apperr.New(apperr.NotFound, "no proposal %q", id)
		case ps[0].State != queue.ProposalPlacing:
			return apperr.New(apperr.Conflict, "the match %q is not being placed (it is %s)", id, ps[0].State)
		}
		p = ps[0]
		p.State, p.ResolvedAt = o.State, at
		return s.resolve(ctx, conn, p.Match.Queue, at, []queue.Proposal{p}, []queue.ProposalOutcome{o}, connection)
	})
	if err != nil {
		return queue.Proposal{}, err
	}
	return p, nil
}

// lockProposal begins a transaction on conn and locks proposal id: its queue's row first (the
// order every writer of the queue takes), then the proposal's, which it returns (none when
// there is no such proposal).
func lockProposal(ctx context.Context, conn *pgxpool.Conn, id string) ([]queue.Proposal, error) {
	var ps []queue.Proposal
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`SELECT 1 FROM queues WHERE name = (SELECT queue FROM queue_proposals WHERE id = $1) FOR NO KEY UPDATE`, id)
	b.Queue(`SELECT `+proposalColumns+` FROM queue_proposals AS p WHERE p.id = $1 FOR UPDATE`, id).Query(func(rows pgx.Rows) error {
		var err error
		ps, err = collectProposals(rows)
		return err
	})
	return ps, conn.SendBatch(ctx, b).Close()
}

// scanIfAny reads the row a query may return (a lock of a row that may not exist) into dst,
// and sets found when there was one.
func scanIfAny(found *bool, dst ...any) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		for rows.Next() {
			*found = true
			if err := rows.Scan(dst...); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}
