package memstore

import (
	"context"
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

// Apply implements queue.ChangeStore: what each cause needs locked besides what the
// lifecycle asks for (a queue's live tickets, its unresolved proposals) and what its answer
// reads of the maps once written.
func (s *Store) Apply(ctx context.Context, at time.Time, cause queue.Cause) (queue.Applied, error) {
	if err := s.lock(ctx, cause.Op()); err != nil {
		return queue.Applied{}, err
	}
	defer s.mu.Unlock()
	var l queue.Locked
	var a queue.Applied
	var q *memQueue
	var err error
	var unresolved []queue.Proposal
	switch c := cause.(type) {
	case queue.TickMatches:
		q, err = s.queueNamed(c.Queue, true)
	case queue.TickProposals:
		q, err = s.queueNamed(c.Queue, true)
	case queue.QueueDeleted:
		if q, err = s.queueNamed(c.Queue, false); err == nil {
			l.Read(queue.Need{}, s.live(q), nil, nil)
		}
	case queue.DeadlinesPassed:
		if q, err = s.queueNamed(c.Queue, true); err == nil {
			unresolved = s.unresolved(c.Queue)
			l.Read(queue.Need{}, nil, unresolved, nil)
		}
	}
	if err != nil {
		return a, err
	}
	if a.Change, err = s.decide(&l, at, cause); err != nil {
		return queue.Applied{}, err
	}
	for i, p := range a.Proposals {
		a.Proposals[i] = p.Clone()
	}
	switch c := cause.(type) {
	case queue.CancelRequest:
		a.Ticket = s.tickets[c.Ticket].t.Clone()
	case queue.MatchPlacement:
		a.Match = s.matches[c.Match].Clone()
	case queue.QueueDeleted:
		q.deleted = true
	case queue.DeadlinesPassed:
		a.Open = len(unresolved) - len(a.Proposals)
	}
	return a, nil
}

// live are the states of q's live tickets, by id. The caller holds the lock.
func (s *Store) live(q *memQueue) []queue.TicketState {
	var live []queue.TicketState
	for _, id := range slices.Sorted(maps.Values(q.searching)) {
		if len(live) == 0 || live[len(live)-1].ID != id { // a party's players share a ticket
			live = append(live, queue.StateOf(&s.tickets[id].t))
		}
	}
	return live
}

// unresolved are the queue's open and placing proposals. The caller holds the lock.
func (s *Store) unresolved(qname string) []queue.Proposal {
	var out []queue.Proposal
	for _, p := range s.proposals {
		if p.Match.Queue == qname && p.Unresolved() {
			out = append(out, *p)
		}
	}
	return out
}

func (s *Store) GetProposal(ctx context.Context, id string) (queue.Proposal, error) {
	return get(s, s.proposals, id, "proposal", (*queue.Proposal).Clone)
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
