package queue

import (
	"slices"
	"time"
)

// A player across queues (DESIGN, "Several queues at once"): a player may search in several
// queues, but be in one live match only. A tick that makes or proposes a match takes, in the
// same commit, a claim for each player of its exclusive tickets, and cancels that player's
// searching exclusive tickets in the other queues (reason matched_elsewhere, an event each,
// in their queue). A player whose claim is live elsewhere is not matched: his ticket is
// cancelled matched_elsewhere and the match dropped, its other tickets searching on.
//
// A claim is the store's row for the player, read and written in the commit's transaction;
// the store serializes the commits that take claims (the memory store under its mutex,
// Postgres under one transaction lock), so what is read is what the commit overwrites. No
// other change writes a claim: its release is read from its ticket (a proposal declined or
// timed out leaves the ticket searching or ended, no longer in the claim's match) and from
// its deadline (the queue's ticket_ttl_s after the match could at the latest be made).
//
// A ticket created while one of its players holds a live claim (TicketsCreated) is stored
// cancelled matched_elsewhere at once. The commits that take claims and the creations of
// exclusive tickets are ordered by the store (Postgres: the ticks hold the claims lock, the
// creations take it shared), so either a commit sees the new ticket and cancels it or the
// creation sees the commit's claim.
//
// A ticket with Exclusive false (a spectator queue's) neither takes a claim nor is refused
// for one, and is not cancelled when its player is matched elsewhere.

// ReasonMatchedElsewhere is the reason of a ticket cancelled because its player was matched
// or proposed in another queue.
const ReasonMatchedElsewhere = "matched_elsewhere"

// DropClaimed: a ticket's player holds a live claim in another match.
const DropClaimed DropReason = "claimed"

// Claim is a player's hold on one match (or proposal) while it may be live.
type Claim struct {
	Player string
	Ticket string // the ticket in the match
	Match  string // the match (or proposal) id the ticket carries
	Queue  string
	Until  time.Time // the latest the match is live: made and within the queue's ticket_ttl_s
	// Holder is Ticket as it is now, read with the claim (Status "": no longer stored).
	// Claims a change writes leave it zero.
	Holder TicketState
}

// LiveAt says whether the claim still holds its player at at: before Until, with its ticket
// still proposed, placing or matched in the claim's match. A ticket no longer stored (purged)
// holds the claim to Until.
func (c *Claim) LiveAt(at time.Time) bool {
	if !c.Until.After(at) {
		return false
	}
	switch h := c.Holder; h.Status {
	case "":
		return true
	case Proposed, Placing:
		return h.Proposal == c.Match
	case Matched:
		return h.Match == c.Match
	}
	return false
}

// TicketsCreated are new tickets as a store creates them, searching (Start), in the
// transaction that stores them (Store.CreateTicket): each exclusive one of which a player
// holds a live claim, in a match of any queue, is cancelled matched_elsewhere with its event.
// Of its players' reads (Need.Players) it uses the claims only; the live tickets may be left
// unread.
type TicketsCreated struct {
	Tickets []TicketState // searching, each with its Players (NewState)
}

// NewState is a ticket's state with its players: what TicketsCreated reads of a new ticket,
// and what a store reads of a player's live tickets (Locked.ReadPlayers).
func NewState(t *Ticket) TicketState {
	s := StateOf(t)
	s.Players = make([]string, len(t.Players))
	for i, p := range t.Players {
		s.Players[i] = p.ID
	}
	return s
}

func (c TicketsCreated) decide(d *decision) error {
	for _, t := range c.Tickets {
		if !t.Exclusive {
			continue
		}
		for _, p := range t.Players {
			if _, read := d.l.claims[p]; !read {
				d.need.Players = append(d.need.Players, p)
			}
		}
	}
	if len(d.need.Players) > 0 {
		return nil
	}
	for _, t := range c.Tickets {
		if !t.Exclusive || t.Status != Searching {
			continue
		}
		if slices.ContainsFunc(t.Players, func(p string) bool {
			cl := d.l.claims[p]
			return cl != nil && cl.Ticket != t.ID && cl.LiveAt(d.c.At)
		}) {
			d.end(t, Cancelled, ReasonMatchedElsewhere, nil)
		}
	}
	return nil
}

// ReadPlayers records what a store read for the players of a Need: their claims (one at most
// each; a player without is read as having none), and their live tickets in every queue
// (with Players and Exclusive set), locked as Read's tickets.
func (l *Locked) ReadPlayers(players []string, claims []Claim, live []TicketState) {
	if l.claims == nil {
		l.claims = make(map[string]*Claim, len(players))
		l.live = make(map[string][]string)
	}
	if l.tickets == nil {
		l.Read(Need{}, nil, nil, nil)
	}
	for _, p := range players {
		if _, ok := l.claims[p]; !ok {
			l.claims[p] = nil
		}
	}
	for i := range claims {
		l.claims[claims[i].Player] = &claims[i]
	}
	for i := range live {
		t := &live[i]
		if _, read := l.tickets[t.ID]; !read {
			l.tickets[t.ID] = t
		}
		for _, p := range t.Players {
			l.live[p] = append(l.live[p], t.ID)
		}
	}
}

// claimsRead says whether the claims of the players of every exclusive searching ticket of
// ms (those a match may take) are read, asking for those not yet.
func (d *decision) claimsRead(queue string, ms []Match) bool {
	for i := range ms {
		for _, team := range ms[i].Teams {
			for _, p := range team.Players {
				t := d.l.tickets[p.TicketID]
				if t == nil || !t.Exclusive || t.Status != Searching || t.Queue != queue {
					continue
				}
				if _, read := d.l.claims[p.ID]; !read {
					d.need.Players = append(d.need.Players, p.ID)
				}
			}
		}
	}
	return len(d.need.Players) == 0
}

// claim takes the claims of m's exclusive players (its tickets all searching in queue), held
// to until, each ticket's claim naming the match id heldAs gives it. A player whose claim is
// live in another match is not taken: his ticket is cancelled matched_elsewhere, the match
// dropped (false), its other tickets left searching. Taken, each player's searching exclusive
// tickets in other queues are cancelled matched_elsewhere.
func (d *decision) claim(queue string, m *Match, until time.Time, heldAs func(ticket string) string) bool {
	type taking struct{ player, ticket string }
	var take []taking
	var refused []string
	for _, team := range m.Teams {
		for _, p := range team.Players {
			t, ok := d.ticket(p.TicketID)
			if !ok || !t.Exclusive {
				continue
			}
			if c := d.claimOf(p.ID); c != nil && c.Ticket != t.ID && c.LiveAt(d.c.At) {
				refused = append(refused, t.ID)
				continue
			}
			take = append(take, taking{p.ID, t.ID})
		}
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		for _, id := range slices.Compact(refused) {
			t, _ := d.ticket(id)
			d.end(t, Cancelled, ReasonMatchedElsewhere, nil)
		}
		d.c.Dropped = append(d.c.Dropped, Drop{Match: m.ID, Ticket: refused[0], Reason: DropClaimed})
		return false
	}
	for _, tk := range take {
		t, _ := d.ticket(tk.ticket)
		c := Claim{Player: tk.player, Ticket: tk.ticket, Match: heldAs(tk.ticket), Queue: queue, Until: until}
		d.c.Claims = append(d.c.Claims, c)
		if d.claimed == nil {
			d.claimed = make(map[string]Claim)
		}
		d.claimed[tk.player] = c
		for _, id := range d.l.live[tk.player] {
			if o, ok := d.ticket(id); ok && o.ID != t.ID && o.Exclusive && o.Status == Searching && o.Queue != queue {
				d.end(o, Cancelled, ReasonMatchedElsewhere, nil)
			}
		}
	}
	return true
}

// claimOf is player's claim as this change leaves it so far (nil: none).
func (d *decision) claimOf(player string) *Claim {
	if c, ok := d.claimed[player]; ok {
		return &c // taken by this change: its ticket is in the change's match, so live
	}
	return d.l.claims[player]
}

// claimUntil is how long a claim taken at at holds when its match may be made as late as
// madeBy: the queue's ticket_ttl_s after (the default when the write gives none).
func claimUntil(madeBy time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		ttl = DefaultTicketTTL
	}
	return madeBy.Add(ttl)
}
