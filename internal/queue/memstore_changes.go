package queue

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// The MemoryStore's changes of its tickets, proposals and matches: the lifecycle decides
// each (lifecycle.go) from what decide reads of the maps, and write carries it out, both
// under the one mutex.

// decide has the lifecycle decide cause at at from the maps, and writes the change. The
// caller holds the lock.
func (s *MemoryStore) decide(l *Locked, at time.Time, cause Cause) (Change, error) {
	c, err := Settle(l, at, cause, func(n Need) ([]TicketState, []Proposal, []Match) {
		return collect(n.Tickets, s.tickets, func(mt *memTicket) TicketState { return StateOf(&mt.t) }),
			collect(n.Proposals, s.proposals, func(p *Proposal) Proposal { return *p }),
			collect(n.Matches, s.matches, func(m Match) Match { return m })
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
func (s *MemoryStore) write(c Change) {
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
	for _, e := range c.Events {
		if q := s.queues[e.Queue]; q != nil {
			s.appendEvent(q, e)
		}
	}
}

func (s *MemoryStore) CommitTick(ctx context.Context, queue string, w TickWrite) (TickCommitted, error) {
	return s.leaderChange(ctx, queue, w.At, TickMatches{Queue: queue, Write: w})
}

func (s *MemoryStore) Propose(ctx context.Context, queue string, w ProposeWrite) (TickCommitted, error) {
	return s.leaderChange(ctx, queue, w.At, TickProposals{Queue: queue, Write: w})
}

// leaderChange is a change the queue's leader makes at its tick.
func (s *MemoryStore) leaderChange(ctx context.Context, queue string, at time.Time, cause Cause) (TickCommitted, error) {
	if err := s.lock(ctx, "commit tick"); err != nil {
		return TickCommitted{}, err
	}
	defer s.mu.Unlock()
	if _, err := s.queueNamed(queue, true); err != nil {
		return TickCommitted{}, err
	}
	c, err := s.decide(&Locked{}, at, cause)
	return c.Committed(), err
}

func (s *MemoryStore) CancelTicket(ctx context.Context, id string, at time.Time) (Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.decide(&Locked{}, at, CancelRequest{Ticket: id, Reason: ReasonCancelled}); err != nil {
		return Ticket{}, err
	}
	return s.tickets[id].t.Clone(), nil
}

func (s *MemoryStore) DeleteQueue(ctx context.Context, name string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueNamed(name, false)
	if err != nil {
		return err
	}
	var l Locked
	var live []TicketState
	for _, id := range slices.Sorted(maps.Values(q.searching)) {
		if len(live) == 0 || live[len(live)-1].ID != id { // a party's players share a ticket
			live = append(live, StateOf(&s.tickets[id].t))
		}
	}
	l.Read(Need{}, live, nil, nil)
	_, err = s.decide(&l, at, QueueDeleted{Queue: name})
	q.deleted = err == nil
	return err
}

func (s *MemoryStore) GetProposal(ctx context.Context, id string) (Proposal, error) {
	return get(s, s.proposals, id, "proposal", (*Proposal).Clone)
}

func (s *MemoryStore) AnswerProposal(ctx context.Context, id, playerID string, accept bool, at time.Time) (Proposal, bool, error) {
	p, err := s.proposalChange(ctx, at, ReadyCheckAnswer{Proposal: id, Player: playerID, Accept: accept})
	return p, err == nil && p.State != ProposalOpen, err
}

func (s *MemoryStore) CompletePlacement(ctx context.Context, id string, connection json.RawMessage, at time.Time) (Proposal, error) {
	return s.proposalChange(ctx, at, PlacementAnswer{Proposal: id, Connection: connection})
}

func (s *MemoryStore) FailPlacement(ctx context.Context, id, reason string, at time.Time) (Proposal, error) {
	return s.proposalChange(ctx, at, PlacementAnswer{Proposal: id, Failure: reason})
}

// proposalChange is a change of one proposal, which it returns as it leaves it.
func (s *MemoryStore) proposalChange(ctx context.Context, at time.Time, cause Cause) (Proposal, error) {
	if err := s.lock(ctx, "answer proposal"); err != nil {
		return Proposal{}, err
	}
	defer s.mu.Unlock()
	c, err := s.decide(&Locked{}, at, cause)
	if err != nil {
		return Proposal{}, err
	}
	return c.Proposals[0].Clone(), nil
}

func (s *MemoryStore) ExpireProposals(ctx context.Context, queue string, at time.Time) ([]Proposal, int, error) {
	if err := s.lock(ctx, "expire proposals"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	if _, err := s.queueNamed(queue, true); err != nil {
		return nil, 0, err
	}
	var l Locked
	var unresolved, out []Proposal
	for _, p := range s.proposals {
		if p.Match.Queue == queue && p.Unresolved() {
			unresolved = append(unresolved, *p)
		}
	}
	l.Read(Need{}, nil, unresolved, nil)
	c, err := s.decide(&l, at, DeadlinesPassed{Queue: queue})
	for _, p := range c.Proposals {
		out = append(out, p.Clone())
	}
	return out, len(unresolved) - len(out), err
}

func (s *MemoryStore) PlacingProposals(ctx context.Context, queue string) ([]Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Proposal
	for _, id := range slices.Sorted(maps.Keys(s.proposals)) {
		if p := s.proposals[id]; p.Match.Queue == queue && p.State == ProposalPlacing {
			out = append(out, p.Clone())
		}
	}
	return out, nil
}

func (s *MemoryStore) PlaceMatch(ctx context.Context, id string, connection json.RawMessage, at time.Time) (Match, error) {
	if err := s.lock(ctx, "place match"); err != nil {
		return Match{}, err
	}
	defer s.mu.Unlock()
	if _, err := s.decide(&Locked{}, at, MatchPlacement{Match: id, Connection: connection}); err != nil {
		return Match{}, err
	}
	return s.matches[id].Clone(), nil
}
