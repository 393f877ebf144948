package memstore

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The Store's changes of its tickets, proposals and matches: the lifecycle decides
// each (internal/queue/lifecycle.go) from what decide reads of the maps, and write carries it out, both
// under the one mutex.

// decide has the lifecycle decide cause at at from the maps, and writes the change. The
// caller holds the lock.
func (s *Store) decide(l *queue.Locked, at time.Time, cause queue.Cause) (queue.Change, error) {
	c, err := queue.Settle(l, at, cause, func(n queue.Need) queue.Reads {
		r := queue.Reads{
			Tickets:   collect(n.Tickets, s.tickets, func(mt *memTicket) queue.TicketState { return queue.StateOf(&mt.t) }),
			Proposals: collect(n.Proposals, s.proposals, func(p *queue.Proposal) queue.Proposal { return *p }),
			Matches:   collect(n.Matches, s.matches, func(m queue.Match) queue.Match { return m }),
		}
		if len(n.Players) > 0 {
			r.Claims, r.Live = s.readPlayers(n.Players)
		}
		return r
	})
	if err == nil {
		s.write(c)
	}
	return c, err
}

// collect is what m holds of ids, each as f gives it.
func collect[V, T any](ids []string, m map[string]V, f func(V) T) []T {
	var out []T
	for _, id := range ids {
		if v, ok := m[id]; ok {
			out = append(out, f(v))
		}
	}
	return out
}

// write carries out a change: a ticket that ends frees its players in its queue; each
// ticket moved is a change for Changes. The caller holds the lock.
func (s *Store) write(c queue.Change) {
	for _, m := range c.Matches {
		s.matches[m.ID] = m.Clone()
	}
	for _, p := range append(slices.Clip(c.NewProposals), c.Proposals...) {
		p = p.Clone()
		s.proposals[p.Match.ID] = &p
	}
	for i := range c.Transitions {
		tr := &c.Transitions[i]
		mt := s.tickets[tr.Ticket]
		if q := s.queues[mt.t.Queue]; tr.Ends() && q != nil {
			for _, p := range mt.t.Players {
				if q.searching[p.ID] == mt.t.ID {
					delete(q.searching, p.ID)
				}
			}
		}
		tr.Apply(&mt.t, c.At)
		s.version++
		mt.version = s.version
	}
	if pl := c.Placement; pl != nil {
		m := s.matches[pl.Match]
		m.Connection = slices.Clone(pl.Connection)
		s.matches[pl.Match] = m
		for _, id := range pl.Tickets {
			s.tickets[id].t.Assignment.Connection = slices.Clone(pl.Connection)
		}
	}
	for _, cl := range c.Claims {
		s.claims[cl.Player] = cl
	}
	for _, e := range c.Events {
		if q := s.queues[e.Queue]; q != nil {
			s.appendEvent(q, e)
		}
	}
	s.writeStanding(c)
}

func (s *Store) CommitTick(ctx context.Context, qname string, w queue.TickWrite) (queue.TickCommitted, error) {
	return s.leaderChange(ctx, qname, w.At, queue.TickMatches{Queue: qname, Write: w})
}

func (s *Store) Propose(ctx context.Context, qname string, w queue.ProposeWrite) (queue.TickCommitted, error) {
	return s.leaderChange(ctx, qname, w.At, queue.TickProposals{Queue: qname, Write: w})
}

// leaderChange is a change the queue's leader makes at its tick.
func (s *Store) leaderChange(ctx context.Context, qname string, at time.Time, cause queue.Cause) (queue.TickCommitted, error) {
	if err := s.lock(ctx, "commit tick"); err != nil {
		return queue.TickCommitted{}, err
	}
	defer s.mu.Unlock()
	if _, err := s.queueNamed(qname, true); err != nil {
		return queue.TickCommitted{}, err
	}
	c, err := s.decide(&queue.Locked{}, at, cause)
	return c.Committed(), err
}

func (s *Store) CancelTicket(ctx context.Context, id string, at time.Time) (queue.Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.decide(&queue.Locked{}, at, queue.CancelRequest{Ticket: id, Reason: queue.ReasonCancelled}); err != nil {
		return queue.Ticket{}, err
	}
	return s.tickets[id].t.Clone(), nil
}

func (s *Store) DeleteQueue(ctx context.Context, name string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueNamed(name, false)
	if err != nil {
		return err
	}
	var l queue.Locked
	var live []queue.TicketState
	for _, id := range slices.Sorted(maps.Values(q.searching)) {
		if len(live) == 0 || live[len(live)-1].ID != id { // a party's players share a ticket
			live = append(live, queue.StateOf(&s.tickets[id].t))
		}
	}
	l.Read(queue.Need{}, live, nil, nil)
	_, err = s.decide(&l, at, queue.QueueDeleted{Queue: name})
	q.deleted = err == nil
	return err
}

func (s *Store) GetProposal(ctx context.Context, id string) (queue.Proposal, error) {
	return get(s, s.proposals, id, "proposal", (*queue.Proposal).Clone)
}

func (s *Store) AnswerProposal(ctx context.Context, id, playerID string, accept bool, at time.Time) (queue.Proposal, bool, error) {
	p, err := s.proposalChange(ctx, at, queue.ReadyCheckAnswer{Proposal: id, Player: playerID, Accept: accept})
	return p, err == nil && p.State != queue.ProposalOpen, err
}

func (s *Store) CompletePlacement(ctx context.Context, id string, connection json.RawMessage, at time.Time) (queue.Proposal, error) {
	return s.proposalChange(ctx, at, queue.PlacementAnswer{Proposal: id, Connection: connection})
}

func (s *Store) FailPlacement(ctx context.Context, id, reason string, at time.Time) (queue.Proposal, error) {
	return s.proposalChange(ctx, at, queue.PlacementAnswer{Proposal: id, Failure: reason})
}

// proposalChange is a change of one proposal, which it returns as it leaves it.
func (s *Store) proposalChange(ctx context.Context, at time.Time, cause queue.Cause) (queue.Proposal, error) {
	if err := s.lock(ctx, "answer proposal"); err != nil {
		return queue.Proposal{}, err
	}
	defer s.mu.Unlock()
	c, err := s.decide(&queue.Locked{}, at, cause)
	if err != nil {
		return queue.Proposal{}, err
	}
	return c.Proposals[0].Clone(), nil
}

func (s *Store) ExpireProposals(ctx context.Context, qname string, at time.Time) ([]queue.Proposal, int, error) {
	if err := s.lock(ctx, "expire proposals"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	if _, err := s.queueNamed(qname, true); err != nil {
		return nil, 0, err
	}
	var l queue.Locked
	var unresolved, out []queue.Proposal
	for _, p := range s.proposals {
		if p.Match.Queue == qname && p.Unresolved() {
			unresolved = append(unresolved, *p)
		}
	}
	l.Read(queue.Need{}, nil, unresolved, nil)
	c, err := s.decide(&l, at, queue.DeadlinesPassed{Queue: qname})
	for _, p := range c.Proposals {
		out = append(out, p.Clone())
	}
	return out, len(unresolved) - len(out), err
}

func (s *Store) PlacingProposals(ctx context.Context, qname string) ([]queue.Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []queue.Proposal
	for _, id := range slices.Sorted(maps.Keys(s.proposals)) {
		if p := s.proposals[id]; p.Match.Queue == qname && p.State == queue.ProposalPlacing {
			out = append(out, p.Clone())
		}
	}
	return out, nil
}

func (s *Store) PlaceMatch(ctx context.Context, id string, connection json.RawMessage, at time.Time) (queue.Match, error) {
	if err := s.lock(ctx, "place match"); err != nil {
		return queue.Match{}, err
	}
	defer s.mu.Unlock()
	if _, err := s.decide(&queue.Locked{}, at, queue.MatchPlacement{Match: id, Connection: connection}); err != nil {
		return queue.Match{}, err
	}
	return s.matches[id].Clone(), nil
}
