package queue

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// The MemoryStore's ready checks (acceptance.go): one mutex makes each call atomic.

func (s *MemoryStore) Propose(ctx context.Context, queue string, w ProposeWrite) (TickCommitted, error) {
	if err := ctx.Err(); err != nil {
		return TickCommitted{}, apperr.Wrap(apperr.Unavailable, err, "queue store: propose")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return TickCommitted{}, apperr.New(apperr.NotFound, "no queue %q", queue)
	}
	var done TickCommitted
	for _, m := range w.Proposals {
		ids := m.Tickets()
		live := len(ids) > 0 && m.BackfillOf == ""
		for _, id := range ids {
			mt, ok := s.tickets[id]
			live = live && ok && mt.t.Queue == queue && mt.t.Status == Searching
		}
		if !live {
			done.Dropped = append(done.Dropped, m.ID)
			continue
		}
		m = cloneMatch(m)
		m.Queue = queue
		state, status := ProposalOpen, Proposed
		if w.Placing {
			state, status = ProposalPlacing, Placing
		}
		s.proposals[m.ID] = &Proposal{Match: m, AcceptBy: w.AcceptBy, PlaceFor: w.PlaceFor, Answers: map[string]bool{}, State: state}
		for _, id := range ids {
			mt := s.tickets[id]
			tp := NewTicketProposal(m, id, w.AcceptBy)
			mt.t.Status, mt.t.UpdatedAt, mt.t.Proposal = status, w.At, tp
			s.version++
			mt.version = s.version
			if !w.Placing {
				s.appendEvent(q, Event{Queue: queue, Type: EventProposed, TicketID: id, MatchID: m.ID, Team: tp.Team, At: w.At})
			}
		}
		done.Matches = append(done.Matches, m.ID)
	}
	return done, nil
}

func (s *MemoryStore) GetProposal(ctx context.Context, id string) (Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.proposals[id]
	if !ok {
		return Proposal{}, apperr.New(apperr.NotFound, "no proposal %q", id)
	}
	return cloneProposal(*p), nil
}

func (s *MemoryStore) AnswerProposal(ctx context.Context, id, playerID string, accept bool, at time.Time) (Proposal, bool, error) {
	if err := ctx.Err(); err != nil {
		return Proposal{}, false, apperr.Wrap(apperr.Unavailable, err, "queue store: answer proposal")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.proposals[id]
	if !ok {
		return Proposal{}, false, apperr.New(apperr.NotFound, "no proposal %q", id)
	}
	if !proposalHas(*p, playerID) {
		return Proposal{}, false, apperr.New(apperr.NotFound, "no player %q in the proposal of match %q", playerID, id)
	}
	if p.State != ProposalOpen {
		return Proposal{}, false, proposalClosed(id, p.State)
	}
	p.Answers[playerID] = accept
	o, resolved := p.Outcome(false, "")
	if resolved {
		s.resolve(p, o, at, nil)
	}
	return cloneProposal(*p), resolved, nil
}

func (s *MemoryStore) ExpireProposals(ctx context.Context, queue string, at time.Time) ([]Proposal, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, apperr.Wrap(apperr.Unavailable, err, "queue store: expire proposals")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[queue]; !ok {
		return nil, 0, apperr.New(apperr.NotFound, "no queue %q", queue)
	}
	var out []Proposal
	open := 0
	for _, id := range slices.Sorted(maps.Keys(s.proposals)) {
		p := s.proposals[id]
		if p.Match.Queue != queue || p.State != ProposalOpen && p.State != ProposalPlacing {
			continue
		}
		if p.AcceptBy.After(at) {
			open++
			continue
		}
		o, _ := p.Outcome(true, "")
		if p.State == ProposalPlacing {
			o = placementFailed(p, ReasonPlacementTimeout)
		}
		s.resolve(p, o, at, nil)
		out = append(out, cloneProposal(*p))
	}
	return out, open, nil
}

// resolve carries out a proposal's outcome on those of its tickets still in it (proposed or
// placing): an accepted one's match is stored (with connection, from an allocator), a placing
// one's tickets wait for the allocator until AcceptBy. The caller holds the lock.
func (s *MemoryStore) resolve(p *Proposal, o ProposalOutcome, at time.Time, connection json.RawMessage) {
	p.State, p.ResolvedAt = o.State, at
	q := s.queues[p.Match.Queue]
	inIt := func(id string) (*memTicket, bool) {
		mt, ok := s.tickets[id]
		return mt, ok && (mt.t.Status == Proposed || mt.t.Status == Placing) && mt.t.Proposal != nil && mt.t.Proposal.MatchID == p.Match.ID
	}
	switch o.State {
	case ProposalPlacing:
		p.ResolvedAt, p.AcceptBy = time.Time{}, at.Add(p.PlaceFor)
		for _, id := range p.Match.Tickets() {
			if mt, ok := inIt(id); ok {
				mt.t.Status, mt.t.UpdatedAt = Placing, at
				mt.t.Proposal.AcceptBy = p.AcceptBy
				s.version++
				mt.version = s.version
			}
		}
		return
	case ProposalAccepted:
		m := cloneMatch(p.Match)
		m.CreatedAt, m.Connection = at, slices.Clone(connection)
		s.matches[m.ID] = m
		assigned := Assignments(m)
		for _, id := range m.Tickets() {
			if mt, ok := inIt(id); ok {
				a := assigned[id]
				a.Connection = slices.Clone(connection)
				s.finish(q, mt, Matched, "", at, &a)
			}
		}
		return
	}
	// The cancels' events first, then the requeues', as the Postgres store writes them.
	for _, id := range p.Match.Tickets() {
		if mt, ok := inIt(id); ok && o.Cancel[id] != "" {
			s.finish(q, mt, Cancelled, o.Cancel[id], at, nil)
		}
	}
	for _, id := range p.Match.Tickets() {
		mt, ok := inIt(id)
		if !ok {
			continue
		}
		mt.t.Status, mt.t.UpdatedAt, mt.t.Proposal = Searching, at, nil
		s.version++
		mt.version = s.version
		s.appendEvent(q, Event{Queue: p.Match.Queue, Type: EventRequeued, TicketID: id, MatchID: p.Match.ID, Reason: o.Reason, At: at})
	}
}

func proposalHas(p Proposal, playerID string) bool {
	for _, t := range p.Match.Teams {
		for _, pl := range t.Players {
			if pl.ID == playerID {
				return true
			}
		}
	}
	return false
}

func proposalClosed(id string, state ProposalState) error {
	return apperr.New(apperr.Conflict, "the proposal of match %q is %s: it takes no more answers", id, state)
}

func cloneProposal(p Proposal) Proposal {
	p.Match = cloneMatch(p.Match)
	p.Answers = maps.Clone(p.Answers)
	return p
}

// placementFailed is the outcome of a placement that failed: every ticket searches again.
func placementFailed(p *Proposal, reason string) ProposalOutcome {
	return ProposalOutcome{State: ProposalFailed, Requeue: p.Match.Tickets(), Reason: reason, Cancel: map[string]string{}}
}

func (s *MemoryStore) PlacingProposals(ctx context.Context, queue string) ([]Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Proposal
	for _, id := range slices.Sorted(maps.Keys(s.proposals)) {
		if p := s.proposals[id]; p.Match.Queue == queue && p.State == ProposalPlacing {
			out = append(out, cloneProposal(*p))
		}
	}
	return out, nil
}

// placing returns placing proposal id. The caller holds the lock.
func (s *MemoryStore) placing(id string) (*Proposal, error) {
	p, ok := s.proposals[id]
	switch {
	case !ok:
		return nil, apperr.New(apperr.NotFound, "no proposal %q", id)
	case p.State != ProposalPlacing:
		return nil, apperr.New(apperr.Conflict, "the match %q is not being placed (it is %s)", id, p.State)
	}
	return p, nil
}

func (s *MemoryStore) CompletePlacement(ctx context.Context, id string, connection json.RawMessage, at time.Time) (Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.placing(id)
	if err != nil {
		return Proposal{}, err
	}
	s.resolve(p, ProposalOutcome{State: ProposalAccepted}, at, connection)
	return cloneProposal(*p), nil
}

func (s *MemoryStore) FailPlacement(ctx context.Context, id, reason string, at time.Time) (Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.placing(id)
	if err != nil {
		return Proposal{}, err
	}
	s.resolve(p, placementFailed(p, reason), at, nil)
	return cloneProposal(*p), nil
}
