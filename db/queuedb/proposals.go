package queuedb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The ready checks (queue/acceptance.go) and the allocator's placements on Postgres. Every
// change of a proposal or its tickets takes the queue's row first, then the proposal's, then
// the tickets in the order of their ids (change.go). A proposal's state leaves open once, in
// the transaction that holds its row and sees it open: an answer on one replica and the
// leader's expiry on another cannot both resolve it.

const proposalColumns = `p.id, p.queue, p.created_at, p.accept_by, p.region, p.teams, p.pairs, p.skill_difference,
    p.average_difference, p.attributes, p.answers, p.state, p.resolved_at, p.place_for`

// A proposal's queue's row, by the proposal's id.
const sqlLockProposalQueue = `SELECT 1 FROM queues WHERE name = (SELECT queue FROM queue_proposals WHERE id = $1) FOR NO KEY UPDATE`

// propose applies TickProposals: one transaction in two round trips, as commitTick.
func (s *Store) propose(ctx context.Context, queueName string, w queue.ProposeWrite, at time.Time) (queue.Applied, error) {
	w.At, w.AcceptBy = at, w.AcceptBy.Truncate(time.Microsecond)
	return s.leaderChange(ctx, "queue: propose", queueName, w.At, queue.TickProposals{Queue: queueName, Write: w})
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

// proposalChange applies a change of proposal id (ReadyCheckAnswer, PlacementAnswer): the
// queue's row and the proposal's locked in the first round trip; an answer that leaves it
// open is written with COMMIT in the second; one that resolves it locks its tickets in the
// second and writes the outcome in the last.
func (s *Store) proposalChange(ctx context.Context, what, id string, at time.Time, cause queue.Cause) (queue.Applied, error) {
	var c queue.Change
	err := db.InTx(ctx, s.pool, what, func(conn *pgxpool.Conn) error {
		ch := &change{at: at, cause: cause, readFirst: true,
			lock: func(b *pgx.Batch) { b.Queue(sqlLockProposalQueue, id) }}
		var err error
		c, err = s.run(ctx, conn, ch)
		return err
	})
	if err != nil {
		return queue.Applied{}, err
	}
	return queue.Applied{Change: c}, nil
}

// expireProposals applies DeadlinesPassed: fenced as the leader's other writes.
func (s *Store) expireProposals(ctx context.Context, queueName string, at time.Time) (queue.Applied, error) {
	var open, due int
	// Most ticks have nothing due: one read without a lock or a transaction says so.
	err := s.work.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE accept_by > $2), count(*) FILTER (WHERE accept_by <= $2)
FROM queue_proposals WHERE queue = $1 AND state IN ('open', 'placing')`, queueName, at).Scan(&open, &due)
	if err != nil || due == 0 {
		return queue.Applied{Open: open}, db.MapError(err, "queue: expire proposals")
	}
	var out queue.Change
	err = db.InTx(ctx, s.work, "queue: expire proposals", func(conn *pgxpool.Conn) error {
		var found bool
		var epoch int64
		var ps []queue.Proposal
		ch := &change{at: at, cause: queue.DeadlinesPassed{Queue: queueName}}
		ch.lock = func(b *pgx.Batch) {
			b.Queue(sqlLockQueue, queueName).Query(scanIfAny(&found, &epoch))
			b.Queue(`SELECT count(*) FROM queue_proposals WHERE queue = $1 AND state IN ('open', 'placing') AND accept_by > $2`, queueName, at).
				QueryRow(func(row pgx.Row) error { return row.Scan(&open) })
			b.Queue(`SELECT `+proposalColumns+` FROM queue_proposals AS p
WHERE p.queue = $1 AND p.state IN ('open', 'placing') AND p.accept_by <= $2 ORDER BY p.id FOR UPDATE`, queueName, at).Query(func(rows pgx.Rows) error {
				var err error
				ps, err = collectProposals(rows)
				return err
			})
		}
		ch.locked = func(l *queue.Locked) error {
			if !found {
				return noQueue(queueName)
			}
			if mine := s.fence(queueName); mine != nil && *mine != epoch {
				return deposed(queueName)
			}
			l.Read(queue.Need{}, nil, ps, nil)
			return nil
		}
		var err error
		out, err = s.run(ctx, conn, ch)
		return err
	})
	if err != nil {
		return queue.Applied{}, err
	}
	return queue.Applied{Change: out, Open: open}, nil
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
