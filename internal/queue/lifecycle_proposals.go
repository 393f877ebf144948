package queue

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// The lifecycle's ready checks and placements (lifecycle.go; acceptance.go and placement.go
// say what they are for): a proposal is open until its players answer or its deadline
// passes, placing until its allocator answers or its deadline passes, and its resolution
// changes only the tickets still in it.

func (c TickProposals) decide(d *decision) error {
	w := &c.Write
	ticketsOf := make([][]string, len(w.Proposals))
	for i := range w.Proposals {
		ticketsOf[i] = w.Proposals[i].Tickets()
		d.tickets(ticketsOf[i]...)
	}
	if !d.need.Empty() || !d.claimsRead(c.Queue, w.Proposals) {
		return nil
	}
	until := claimUntil(w.AcceptBy.Add(w.PlaceFor), w.ClaimFor)
	state, status := ProposalOpen, Proposed
	if w.Placing {
		state, status = ProposalPlacing, Placing
	}
	for i := range w.Proposals {
		m := w.Proposals[i]
		if m.BackfillOf != "" { // its match is running already: made at once, never proposed
			d.c.Dropped = append(d.c.Dropped, Drop{Match: m.ID, Reason: DropFill})
			continue
		}
		if !d.searching(c.Queue, &m, ticketsOf[i]) ||
			!d.claim(c.Queue, &m, until, func(string) string { return m.ID }) {
			continue
		}
		m.Queue, m.CreatedAt = c.Queue, d.c.At
		d.c.NewProposals = append(d.c.NewProposals,
			Proposal{Match: m, AcceptBy: w.AcceptBy, PlaceFor: w.PlaceFor, Answers: map[string]bool{}, State: state})
		assigned := assignments(m)
		for _, id := range ticketsOf[i] {
			t, _ := d.ticket(id)
			tp := ticketProposal(m, assigned[id], w.AcceptBy)
			d.move(t, Transition{To: status, Proposal: tp})
			if !w.Placing { // a placement has no event until it ends
				d.event(Event{Queue: c.Queue, Type: EventProposed, TicketID: id, MatchID: m.ID, Team: tp.Team})
			}
		}
	}
	return nil
}

func (c ReadyCheckAnswer) decide(d *decision) error {
	p, ok, err := d.proposal(c.Proposal)
	switch {
	case !ok || err != nil:
		return err
	case !proposalHas(p, c.Player):
		return apperr.New(apperr.NotFound, "no player %q in the proposal of match %q", c.Player, c.Proposal)
	case p.State != ProposalOpen:
		return apperr.New(apperr.Conflict, "the proposal of match %q is %s: it takes no more answers", c.Proposal, p.State)
	}
	answered := *p
	answered.Answers = maps.Clone(p.Answers)
	if answered.Answers == nil {
		answered.Answers = map[string]bool{}
	}
	answered.Answers[c.Player] = c.Accept
	o, resolved := outcome(&answered, false, "")
	if !resolved {
		d.c.Proposals = append(d.c.Proposals, answered)
		return nil
	}
	if !d.tickets(p.Match.Tickets()...) {
		return nil
	}
	d.resolve(answered, o, nil)
	return nil
}

func (c DeadlinesPassed) decide(d *decision) error {
	var due []*Proposal
	for _, id := range slices.Sorted(maps.Keys(d.l.proposals)) {
		p := d.l.proposals[id]
		if p != nil && p.Match.Queue == c.Queue && p.Unresolved() && !p.AcceptBy.After(d.c.At) {
			due = append(due, p)
			d.tickets(p.Match.Tickets()...)
		}
	}
	if !d.need.Empty() {
		return nil
	}
	for _, p := range due {
		o, _ := outcome(p, true, "")
		if p.State == ProposalPlacing {
			o = placementFailed(p, ReasonPlacementTimeout)
		}
		d.resolve(*p, o, nil)
	}
	return nil
}

func (c PlacementAnswer) decide(d *decision) error {
	p, ok, err := d.proposal(c.Proposal)
	switch {
	case !ok || err != nil:
		return err
	case p.State != ProposalPlacing:
		return apperr.New(apperr.Conflict, "the match %q is not being placed (it is %s)", c.Proposal, p.State)
	}
	if !d.tickets(p.Match.Tickets()...) {
		return nil
	}
	if c.Failure != "" {
		d.resolve(*p, placementFailed(p, c.Failure), nil)
		return nil
	}
	d.resolve(*p, proposalOutcome{state: ProposalAccepted}, c.Connection)
	return nil
}

// proposalOutcome is what resolving a proposal does to its tickets.
type proposalOutcome struct {
	state  ProposalState
	cancel map[string]string // ticket id -> reason
	reason string            // the requeued events' reason
}

// outcome says whether p is resolved by its answers (every player accepted, or one
// declined), by its deadline (timedOut), or by the cancel of ticket cancelled ("": none),
// and which tickets are cancelled (the others search again). ok is false while p stays open.
func outcome(p *Proposal, timedOut bool, cancelled string) (o proposalOutcome, ok bool) {
	type ticketAnswers struct{ declined, silent bool }
	byTicket := map[string]*ticketAnswers{}
	var order []string
	anyDeclined, allAccepted := false, true
	for _, team := range p.Match.Teams {
		for _, pl := range team.Players {
			ta := byTicket[pl.TicketID]
			if ta == nil {
				ta = &ticketAnswers{}
				byTicket[pl.TicketID] = ta
				order = append(order, pl.TicketID)
			}
			accepted, answered := p.Answers[pl.ID]
			switch {
			case !answered:
				ta.silent, allAccepted = true, false
			case !accepted:
				ta.declined, anyDeclined, allAccepted = true, true, false
			}
		}
	}
	switch {
	case cancelled != "":
		o = proposalOutcome{state: ProposalDeclined, reason: ReasonCancelled}
	case anyDeclined:
		o = proposalOutcome{state: ProposalDeclined, reason: ReasonDeclined}
	case allAccepted && p.PlaceFor > 0:
		return proposalOutcome{state: ProposalPlacing}, true
	case allAccepted:
		return proposalOutcome{state: ProposalAccepted}, true
	case timedOut:
		o = proposalOutcome{state: ProposalTimedOut, reason: ReasonAcceptanceTimeout}
	default:
		return proposalOutcome{}, false
	}
	o.cancel = map[string]string{}
	for _, id := range order {
		ta := byTicket[id]
		switch {
		case id == cancelled:
			o.cancel[id] = ReasonCancelled
		case cancelled == "" && ta.declined:
			o.cancel[id] = ReasonDeclined
		case cancelled == "" && timedOut && !anyDeclined && ta.silent:
			o.cancel[id] = ReasonAcceptanceTimeout
		}
	}
	return o, true
}

// placementFailed is the outcome of a placement that failed: every ticket searches again.
func placementFailed(p *Proposal, reason string) proposalOutcome {
	return proposalOutcome{state: ProposalFailed, reason: reason}
}

// resolve carries out p's outcome o on those of its tickets still in it (proposed or
// placing in p; a ticket cancelled since with its queue is left alone), with p as it then
// is in the change's proposals. Accepted, its match is made (at connection, from a
// placement); placing, its tickets wait for the allocator until the new deadline;
// otherwise its cancelled tickets end first, then the others search again, their events in
// that order.
func (d *decision) resolve(p Proposal, o proposalOutcome, connection json.RawMessage) {
	at := d.c.At
	p.State, p.ResolvedAt = o.state, at
	if o.state == ProposalPlacing {
		p.ResolvedAt, p.AcceptBy = time.Time{}, at.Add(p.PlaceFor)
	}
	d.c.Proposals = append(d.c.Proposals, p)
	var in []TicketState
	for _, id := range p.Match.Tickets() {
		if t, ok := d.ticket(id); ok && (t.Status == Proposed || t.Status == Placing) && t.Proposal == p.Match.ID {
			in = append(in, t)
		}
	}
	switch o.state {
	case ProposalPlacing:
		assigned := assignments(p.Match)
		for _, t := range in {
			d.move(t, Transition{To: Placing, Proposal: ticketProposal(p.Match, assigned[t.ID], p.AcceptBy)})
		}
		return
	case ProposalAccepted:
		m := p.Match
		m.CreatedAt, m.Connection = at, connection
		d.c.Matches = append(d.c.Matches, m)
		d.lowPriority(m)
		assigned := assignments(m)
		for _, t := range in {
			a := assigned[t.ID]
			a.Connection = connection
			d.end(t, Matched, "", &a)
		}
		return
	}
	d.dodges(p, o, in)
	for _, t := range in {
		if reason := o.cancel[t.ID]; reason != "" {
			d.end(t, Cancelled, reason, nil)
		}
	}
	for _, t := range in {
		if o.cancel[t.ID] == "" {
			d.move(t, Transition{To: Searching})
			d.event(Event{Queue: t.Queue, Type: EventRequeued, TicketID: t.ID, MatchID: p.Match.ID, Reason: o.reason})
		}
	}
}

// dodges marks the players of p's tickets still in it (in) who dodged its ready check: who
// declined it, or, timed out, who did not answer. A cancel or a failed placement is no
// dodge.
func (d *decision) dodges(p Proposal, o proposalOutcome, in []TicketState) {
	if o.state != ProposalTimedOut && (o.state != ProposalDeclined || o.reason != ReasonDeclined) {
		return
	}
	for _, team := range p.Match.Teams {
		for _, pl := range team.Players {
			accepted, answered := p.Answers[pl.ID]
			dodged := o.state == ProposalTimedOut && !answered || o.state == ProposalDeclined && answered && !accepted
			if dodged && slices.ContainsFunc(in, func(t TicketState) bool { return t.ID == pl.TicketID }) {
				d.c.Dodges = append(d.c.Dodges, PlayerMark{Queue: p.Match.Queue, Player: pl.ID, Match: p.Match.ID})
			}
		}
	}
}

// proposalHas says whether a player is in p.
func proposalHas(p *Proposal, playerID string) bool {
	for _, t := range p.Match.Teams {
		for _, pl := range t.Players {
			if pl.ID == playerID {
				return true
			}
		}
	}
	return false
}

// ticketProposal is what a ticket of m, assigned a, is told of its proposal.
func ticketProposal(m Match, a Assignment, acceptBy time.Time) *TicketProposal {
	return &TicketProposal{MatchID: m.ID, Team: a.Team, Region: m.Region, Teams: a.Teams, AcceptBy: acceptBy,
		Attributes: m.Attributes}
}

// assignments returns what each ticket of m is told when the match is made: its team, the
// match's region and everyone's ids by team; for a backfill's fill, the running match's id
// and who joined which team.
func assignments(m Match) map[string]Assignment {
	teams := make([][]string, len(m.Teams))
	for i, t := range m.Teams {
		teams[i] = make([]string, len(t.Players))
		for j, p := range t.Players {
			teams[i][j] = p.ID
		}
	}
	id, fill := m.ID, ""
	var joined [][]string
	if m.BackfillOf != "" {
		id, fill, joined = m.BackfillOf, m.ID, make([][]string, len(m.Teams))
		for i, t := range m.Teams {
			joined[i] = []string{}
			for _, p := range t.Players {
				if p.TicketID != m.BackfillTicket {
					joined[i] = append(joined[i], p.ID)
				}
			}
		}
	}
	names, roles, open := shapeOfTeams(m.Teams)
	out := make(map[string]Assignment)
	for i, t := range m.Teams {
		for _, p := range t.Players {
			team := i
			if p.TicketID == m.BackfillTicket && m.BackfillOf != "" {
				team = 0
			}
			out[p.TicketID] = Assignment{MatchID: id, Team: team, Region: m.Region, Teams: teams, Joined: joined, FillID: fill,
				Attributes: m.Attributes, TeamNames: names, Roles: roles, OpenSlots: open}
		}
	}
	return out
}

// shapeOfTeams is what an assignment says of a shaped match's teams: their names (nil
// when none has one), the players' roles (nil without roles) and the open slots (nil when
// every team is full).
func shapeOfTeams(teams []MatchTeam) (names []string, roles map[string]string, open []int) {
	for i, t := range teams {
		if t.Name != "" && names == nil {
			names = make([]string, len(teams))
		}
		if t.OpenSlots > 0 && open == nil {
			open = make([]int, len(teams))
		}
		if names != nil {
			names[i] = t.Name
		}
		if open != nil {
			open[i] = t.OpenSlots
		}
		for j, r := range t.Roles {
			if r == "" {
				continue
			}
			if roles == nil {
				roles = map[string]string{}
			}
			roles[t.Players[j].ID] = r
		}
	}
	return names, roles, open
}
