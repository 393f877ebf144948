package queue

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// The ticket lifecycle: what happens to a ticket, decided here once for every store.
//
//	                 a tick's match
//	  searching ──────────────────────────────────────────────────► matched
//	   │ │ │  ▲                                                       ▲   │ placed: the
//	   │ │ │  │ requeued (declined, timed out,                        │   │ connection,
//	   │ │ │  │ placement failed): the wait kept                      │   │ again and again
//	   │ │ │  └──────────────┬─────────────────┐                      │   ▼
//	   │ │ └──► proposed ────┴─► placing ──────┴──────────────────────┘
//	   │ │      (ready check)  (allocator)       all accepted / placed
//	   │ └──► expired: ttl, no_region, invalid (a tick)
//	   └────► cancelled: cancelled, queue deleted, declined, acceptance_timeout
//	          (a proposed ticket too; a placing one cannot be)
//
// A store calls Decide with what happened (a Cause) and what it has read and locked of the
// tickets, proposals and matches concerned (Locked). Decide answers either what else the
// store must read first (Need: the store locks and reads it, adds it to Locked and calls
// Decide again), or the Change: the tickets' transitions, the matches and proposals to
// store, the events in the order they are numbered, and the matches dropped and why. The
// store writes the Change in the same transaction that holds what it read; it decides
// nothing itself, so the memory store and the Postgres store differ in storage alone.
//
// Decide does no I/O and reads no clock (the time of the change is an argument): its tests
// are tables of what was locked, what happened and what must follow (lifecycle_test.go).
//
// A new transition (a player matched in another queue, a match function's proposals) is a
// new Cause with its decide method, written with the steps below (move, event, resolve);
// what it must read is asked through Need, which every store already answers.

// A Cause is what happened to a queue's tickets: one of the types below, each named for the
// call that applies it (Store.Apply, through the functions of apply.go).
type Cause interface {
	decide(d *decision) error
	// Op names the store call that applies it (apply.go), for its metrics and spans.
	Op() string
}

// TickMatches are a tick's matches and expiries (CommitTick): each match whose tickets
// are all still searching is made, the others are dropped whole; each expiry of a ticket
// still searching ends it.
type TickMatches struct {
	Queue string
	Write TickWrite
}

// TickProposals are a tick's matches proposed for a ready check, or placed by an allocator
// (Propose): each match whose tickets are all searching becomes a proposal, its
// tickets proposed (or placing) and held from any other match.
type TickProposals struct {
	Queue string
	Write ProposeWrite
}

// ReadyCheckAnswer is a player's answer to a proposal (AnswerProposal).
type ReadyCheckAnswer struct {
	Proposal, Player string
	Accept           bool
}

// DeadlinesPassed is the leader's expiry of the queue's proposals whose deadline has passed
// (ExpireProposals): the store locks those it finds due, and Decide resolves each one
// that is (an open one as timed out, a placing one as failed).
type DeadlinesPassed struct {
	Queue string
}

// PlacementAnswer is the answer to a placing proposal (CompletePlacement and
// FailPlacement): its match placed at Connection, or, with Failure, not placed.
type PlacementAnswer struct {
	Proposal   string
	Connection json.RawMessage
	Failure    string // the requeued events' reason; "": placed
}

// MatchPlacement is where a match already made is played (PlaceMatch).
type MatchPlacement struct {
	Match      string
	Connection json.RawMessage
}

// CancelRequest is a ticket's cancel (CancelTicket), with the reason it ends with.
type CancelRequest struct {
	Ticket, Reason string
}

// QueueDeleted is a queue's deletion (DeleteQueue): the store locks every live ticket
// of the queue (searching, proposed or placing), and Decide cancels them.
type QueueDeleted struct {
	Queue string
}

// Start is a new ticket as its life begins: searching since its creation, with no reason,
// assignment or proposal. A store creates a ticket so.
func Start(t *Ticket) {
	t.Status, t.UpdatedAt, t.Reason, t.Assignment, t.Proposal = Searching, t.CreatedAt, "", nil, nil
}

// TicketState is what the lifecycle reads of a ticket.
type TicketState struct {
	ID     string
	Queue  string
	Status Status
	// Proposal is the match id of the proposal a proposed or placing ticket is in.
	Proposal string
	// Match and Team are a matched ticket's, from its assignment.
	Match string
	Team  int
	// Exclusive: its players are matched in one queue at a time (lifecycle_claims.go).
	Exclusive bool
	// Players are the ticket's players' ids, read only for a player's live tickets
	// (Locked.ReadPlayers).
	Players []string
}

// StateOf is what the lifecycle reads of t.
func StateOf(t *Ticket) TicketState {
	s := TicketState{ID: t.ID, Queue: t.Queue, Status: t.Status, Exclusive: t.Exclusive}
	if t.Proposal != nil {
		s.Proposal = t.Proposal.MatchID
	}
	if t.Assignment != nil {
		s.Match, s.Team = t.Assignment.MatchID, t.Assignment.Team
	}
	return s
}

// Need is what Decide must read before it can decide: the tickets, proposals and matches of
// these ids, each sorted (the order a store locks them in); and for Players, their claims
// and live tickets in every queue (Locked.ReadPlayers).
type Need struct {
	Tickets, Proposals, Matches []string
	Players                     []string
}

// Empty says whether nothing is needed.
func (n Need) Empty() bool {
	return len(n.Tickets)+len(n.Proposals)+len(n.Matches)+len(n.Players) == 0
}

// Locked is what a store has read, and holds locked, of one change's tickets, proposals and
// matches. The zero Locked has read nothing.
type Locked struct {
	tickets   map[string]*TicketState // nil: asked for and not there
	proposals map[string]*Proposal
	matches   map[string]*Match
	claims    map[string]*Claim   // by player; nil: read, none
	live      map[string][]string // player -> his live tickets read with his claim
}

// Read records what a store read for n: the tickets, proposals and matches it found (those
// of n's ids that exist, and any others the call locks, as a queue's live tickets for
// QueueDeleted). An id of n not among them does not exist for the change (a ticket of
// another queue included). The lifecycle never modifies what it is given.
func (l *Locked) Read(n Need, tickets []TicketState, proposals []Proposal, matches []Match) {
	if l.tickets == nil {
		l.tickets = make(map[string]*TicketState, len(n.Tickets)+len(tickets))
		l.proposals = make(map[string]*Proposal)
		l.matches = make(map[string]*Match)
	}
	for _, id := range n.Tickets {
		l.tickets[id] = nil
	}
	for _, id := range n.Proposals {
		l.proposals[id] = nil
	}
	for _, id := range n.Matches {
		l.matches[id] = nil
	}
	for i := range tickets {
		l.tickets[tickets[i].ID] = &tickets[i]
	}
	for i := range proposals {
		l.proposals[proposals[i].Match.ID] = &proposals[i]
	}
	for i := range matches {
		l.matches[matches[i].ID] = &matches[i]
	}
}

// Change is what one change of a queue's tickets comes to: what the store writes, in one
// transaction.
type Change struct {
	At time.Time
	// Transitions are the tickets' moves, one per ticket, in the order of their events.
	Transitions []Transition
	// Matches are the matches to store (with their queue, creation time and connection).
	Matches []Match
	// NewProposals are the proposals to store; Proposals the stored ones that changed
	// (answers, state, deadline), as they now are.
	NewProposals, Proposals []Proposal
	// Placement is a made match's connection, for the match and its tickets still in it.
	Placement *Placement
	// Events are the change's events, Seq unset, in the order the store numbers them.
	Events []Event
	// Dropped are the matches of a tick not made, and why.
	Dropped []Drop
	// Dodges are the players who declined a ready check or let it time out; LowPriority
	// the low-priority players of the matches made, each a game he owed played
	// (penalties.go). The store keeps them in the players' standing of the queue's context.
	Dodges, LowPriority []PlayerMark
	// Claims are the players' claims to store, each replacing the player's one.
	Claims []Claim
}

// PlayerMark is a player's dodge, or low-priority game, in a queue's match.
type PlayerMark struct {
	Queue, Player, Match string
}

// Empty says whether the change writes nothing.
func (c *Change) Empty() bool {
	return len(c.Transitions)+len(c.Matches)+len(c.NewProposals)+len(c.Proposals)+len(c.Events) == 0 && c.Placement == nil
}

// Committed is what a tick's change made: its matches (or proposals) stored, dropped, and
// the tickets it expired.
func (c *Change) Committed() TickCommitted {
	var done TickCommitted
	for _, m := range c.Matches {
		done.Matches = append(done.Matches, m.ID)
	}
	for _, p := range c.NewProposals {
		done.Matches = append(done.Matches, p.Match.ID)
	}
	for _, d := range c.Dropped {
		done.Dropped = append(done.Dropped, d.Match)
		if d.Reason == DropClaimed {
			done.Claimed++
		}
	}
	for _, tr := range c.Transitions {
		if tr.To == Expired {
			done.Expired = append(done.Expired, tr.Ticket)
		}
	}
	for _, e := range c.Events {
		if e.Type == EventCancelled && e.Reason == ReasonMatchedElsewhere {
			if done.Elsewhere == nil {
				done.Elsewhere = map[string]int{}
			}
			done.Elsewhere[e.Queue]++
		}
	}
	return done
}

// Transition is a ticket's move from one status to another.
type Transition struct {
	Ticket   string
	From, To Status
	Reason   string          // expired and cancelled: why
	Proposal *TicketProposal // proposed and placing: the proposal it is in; nil otherwise
	// Assignment is what a matched ticket is told; nil otherwise.
	Assignment *Assignment
}

// Ends says whether the ticket's life is over (matched, expired or cancelled): its players
// may search again in its queue.
func (tr *Transition) Ends() bool { return !tr.To.Live() }

// Live says whether a ticket of this status may still change: searching, proposed or
// placing. A live ticket holds its players in its queue.
func (st Status) Live() bool { return st == Searching || st == Proposed || st == Placing }

// Apply moves t as tr says, at at.
func (tr *Transition) Apply(t *Ticket, at time.Time) {
	t.Status, t.Reason, t.Proposal, t.Assignment, t.UpdatedAt = tr.To, tr.Reason, tr.Proposal, tr.Assignment, at
}

// Placement is where a made match is played: the match and its tickets still matched in it
// get the connection in their assignment, each ticket with a placed event. The tickets'
// status stays matched.
type Placement struct {
	Match      string
	Connection json.RawMessage
	Tickets    []string
}

// Drop is a match of a tick not made: a ticket of it (Ticket, "" for a match of none) was no
// longer searching, or is not the queue's, or was already taken by an earlier match of the
// same write.
type Drop struct {
	Match, Ticket string
	Reason        DropReason
}

// DropReason says why a match was dropped.
type DropReason string

const (
	DropNoTickets    DropReason = "no_tickets"    // the match names no ticket
	DropUnknown      DropReason = "unknown"       // a ticket that does not exist in the queue
	DropNotSearching DropReason = "not_searching" // a ticket matched, proposed, ended meanwhile
	DropTaken        DropReason = "taken"         // a ticket an earlier match of the write took
	DropFill         DropReason = "fill"          // a backfill's fill is made, never proposed
)

// Decide decides what cause does at at, given what is locked: the Change, or else what it
// needs read first (the Change is then empty). An error is the caller's (an unknown
// proposal, an answer to a resolved one, a cancel of a matched ticket): nothing changes.
func Decide(l *Locked, at time.Time, cause Cause) (Change, Need, error) {
	d := &decision{l: l, c: Change{At: at}}
	if err := cause.decide(d); err != nil {
		return Change{}, Need{}, err
	}
	if !d.need.Empty() {
		slices.Sort(d.need.Tickets)
		d.need.Tickets = slices.Compact(d.need.Tickets)
		slices.Sort(d.need.Proposals)
		slices.Sort(d.need.Matches)
		slices.Sort(d.need.Players)
		d.need.Players = slices.Compact(d.need.Players)
		return Change{}, d.need, nil
	}
	return d.c, Need{}, nil
}

// Reads are what a store read for a Need: Tickets, Proposals and Matches for Locked.Read,
// Claims and Live (the players' live tickets) for Locked.ReadPlayers.
type Reads struct {
	Tickets   []TicketState
	Proposals []Proposal
	Matches   []Match
	Claims    []Claim
	Live      []TicketState
}

// Settle decides cause at at for a store that reads without round trips (the memory store):
// it gives the lifecycle what read finds of each Need until the lifecycle has decided.
func Settle(l *Locked, at time.Time, cause Cause, read func(Need) Reads) (Change, error) {
	for {
		c, need, err := Decide(l, at, cause)
		if err != nil || need.Empty() {
			return c, err
		}
		r := read(need)
		l.Read(need, r.Tickets, r.Proposals, r.Matches)
		if len(need.Players) > 0 {
			l.ReadPlayers(need.Players, r.Claims, r.Live)
		}
	}
}

// decision is one Decide under way: what it has read, what it needs, what it decided.
type decision struct {
	l     *Locked
	need  Need
	c     Change
	moved map[string]Status // the tickets this change moved, to where
	// claimed are the claims this change took, by player.
	claimed map[string]Claim
}

// tickets says whether every ticket of ids has been read, asking for those not yet.
func (d *decision) tickets(ids ...string) bool {
	for _, id := range ids {
		if _, read := d.l.tickets[id]; !read {
			d.need.Tickets = append(d.need.Tickets, id)
		}
	}
	return len(d.need.Tickets) == 0
}

// proposal is proposal id once read (ok false while it is not), NotFound if there is none.
func (d *decision) proposal(id string) (p *Proposal, ok bool, err error) {
	p, read := d.l.proposals[id]
	switch {
	case !read:
		d.need.Proposals = append(d.need.Proposals, id)
	case p == nil:
		err = apperr.New(apperr.NotFound, "no proposal %q", id)
	}
	return p, read, err
}

// match is match id once read (ok false while it is not), NotFound if there is none.
func (d *decision) match(id string) (m *Match, ok bool, err error) {
	m, read := d.l.matches[id]
	switch {
	case !read:
		d.need.Matches = append(d.need.Matches, id)
	case m == nil:
		err = apperr.New(apperr.NotFound, "no match %q", id)
	}
	return m, read, err
}

// ticket is ticket id as this change leaves it so far; ok false when it was not read or
// does not exist.
func (d *decision) ticket(id string) (TicketState, bool) {
	t := d.l.tickets[id]
	if t == nil {
		return TicketState{}, false
	}
	s := *t
	if to, ok := d.moved[id]; ok {
		s.Status = to
	}
	return s, true
}

// move records a ticket's transition; the caller adds its event.
func (d *decision) move(t TicketState, tr Transition) {
	tr.Ticket, tr.From = t.ID, t.Status
	d.c.Transitions = append(d.c.Transitions, tr)
	if d.moved == nil {
		d.moved = make(map[string]Status)
	}
	d.moved[t.ID] = tr.To
}

// event appends an event of the change, at its time.
func (d *decision) event(e Event) {
	e.At = d.c.At
	d.c.Events = append(d.c.Events, e)
}

// end moves a live ticket to a final status with its event: matched with assignment a, or
// expired or cancelled with reason.
func (d *decision) end(t TicketState, to Status, reason string, a *Assignment) {
	d.move(t, Transition{To: to, Reason: reason, Assignment: a})
	e := Event{Queue: t.Queue, TicketID: t.ID, Reason: reason}
	switch to {
	case Matched:
		e.Type, e.MatchID, e.Team, e.Reason = EventMatched, a.MatchID, a.Team, ""
	case Expired:
		e.Type = EventExpired
	default:
		e.Type = EventCancelled
	}
	d.event(e)
}

// lowPriority marks the low-priority players of m, a match made, as having played one of
// the games they owe.
func (d *decision) lowPriority(m Match) {
	for _, t := range m.Teams {
		for _, p := range t.Players {
			if p.LowPriority {
				d.c.LowPriority = append(d.c.LowPriority, PlayerMark{Queue: m.Queue, Player: p.ID, Match: m.ID})
			}
		}
	}
}

// searching checks that every ticket of m is searching in queue and not taken by an earlier
// match of the change: the match is then made (or proposed), else dropped with the reason.
func (d *decision) searching(queue string, m *Match, ids []string) bool {
	if len(ids) == 0 {
		d.c.Dropped = append(d.c.Dropped, Drop{Match: m.ID, Reason: DropNoTickets})
		return false
	}
	for _, id := range ids {
		t, ok := d.ticket(id)
		why := DropReason("")
		switch {
		case !ok || t.Queue != queue:
			why = DropUnknown
		case t.Status == Searching:
			continue
		case d.moved[id] != "":
			why = DropTaken
		default:
			why = DropNotSearching
		}
		d.c.Dropped = append(d.c.Dropped, Drop{Match: m.ID, Ticket: id, Reason: why})
		return false
	}
	return true
}

func (c TickMatches) decide(d *decision) error {
	w := &c.Write
	ticketsOf := make([][]string, len(w.Matches))
	for i := range w.Matches {
		ticketsOf[i] = w.Matches[i].Tickets()
		d.tickets(ticketsOf[i]...)
	}
	for _, e := range w.Expired {
		d.tickets(e.TicketID)
	}
	if !d.need.Empty() || !d.claimsRead(c.Queue, w.Matches) {
		return nil
	}
	until := claimUntil(d.c.At, w.ClaimFor)
	for i := range w.Matches {
		m := w.Matches[i]
		if !d.searching(c.Queue, &m, ticketsOf[i]) {
			continue
		}
		assigned := assignments(m)
		if !d.claim(c.Queue, &m, until, func(id string) string { return assigned[id].MatchID }) {
			continue
		}
		m.Queue = c.Queue
		d.c.Matches = append(d.c.Matches, m)
		d.lowPriority(m)
		for _, id := range ticketsOf[i] {
			t, _ := d.ticket(id)
			a := assigned[id]
			d.end(t, Matched, "", &a)
		}
	}
	for _, e := range w.Expired {
		if t, ok := d.ticket(e.TicketID); ok && t.Queue == c.Queue && t.Status == Searching {
			d.end(t, Expired, e.Reason, nil)
		}
	}
	return nil
}

func (c CancelRequest) decide(d *decision) error {
	if !d.tickets(c.Ticket) {
		return nil
	}
	t, ok := d.ticket(c.Ticket)
	switch {
	case !ok:
		return apperr.New(apperr.NotFound, "no ticket %q", c.Ticket)
	case t.Status == Cancelled:
		return nil // as it is
	case t.Status == Searching:
		d.end(t, Cancelled, c.Reason, nil)
		return nil
	case t.Status != Proposed:
		return apperr.New(apperr.Conflict, "ticket %q is %s: only a searching ticket can be cancelled", t.ID, t.Status)
	}
	// A proposed ticket cancelled dissolves its proposal, as a decline would.
	p, ok, err := d.proposal(t.Proposal)
	if !ok {
		return nil
	}
	if err != nil || p.State != ProposalOpen {
		return fmt.Errorf("queue: ticket %q is proposed in match %q, which is not an open proposal", t.ID, t.Proposal)
	}
	if !d.tickets(p.Match.Tickets()...) {
		return nil
	}
	o, _ := outcome(p, false, t.ID)
	o.cancel[t.ID] = c.Reason
	d.resolve(*p, o, nil)
	return nil
}

func (c QueueDeleted) decide(d *decision) error {
	ids := make([]string, 0, len(d.l.tickets))
	for id, t := range d.l.tickets {
		if t != nil && t.Queue == c.Queue {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if t, _ := d.ticket(id); t.Status.Live() {
			d.end(t, Cancelled, ReasonQueueDeleted, nil)
		}
	}
	return nil
}

// ReasonQueueDeleted is the reason of the tickets a queue's deletion cancels.
const ReasonQueueDeleted = "queue deleted"

func (c MatchPlacement) decide(d *decision) error {
	m, ok, err := d.match(c.Match)
	switch {
	case !ok || err != nil:
		return err
	case m.BackfillOf != "":
		return apperr.New(apperr.Conflict, "match %q is a backfill's fill: its players join the running match %q", c.Match, m.BackfillOf)
	}
	ids := m.Tickets()
	if !d.tickets(ids...) {
		return nil
	}
	pl := &Placement{Match: m.ID, Connection: c.Connection}
	for _, id := range ids {
		if t, ok := d.ticket(id); ok && t.Status == Matched && t.Match == m.ID {
			pl.Tickets = append(pl.Tickets, id)
			d.event(Event{Queue: m.Queue, Type: EventPlaced, TicketID: id, MatchID: m.ID, Team: t.Team})
		}
	}
	d.c.Placement = pl
	return nil
}
