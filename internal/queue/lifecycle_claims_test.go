package queue_test

import (
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// TestLifecycleTicketsCreated: a new exclusive ticket of a player whose claim is live in
// another match is cancelled matched_elsewhere with its event; one whose claim has ended (its
// time passed, or its ticket no longer in the claim's match), a new ticket without a claim
// and one that is not exclusive search on. Only the exclusive tickets' players are read.
func TestLifecycleTicketsCreated(t *testing.T) {
	held := func(player, ticket string, until int, holder queue.TicketState) queue.Claim {
		return queue.Claim{Player: player, Ticket: ticket, Match: "m1", Queue: "ranked", Until: sec(until), Holder: holder}
	}
	matchedIn := func(id, match string) queue.TicketState {
		return queue.TicketState{ID: id, Queue: "ranked", Status: queue.Matched, Match: match}
	}
	claims := []queue.Claim{
		held("a1", "ra", 100, matchedIn("ra", "m1")),                                                 // live
		held("b1", "rb", 5, matchedIn("rb", "m1")),                                                   // ended at 5
		held("c1", "rc", 100, queue.TicketState{ID: "rc", Queue: "ranked", Status: queue.Searching}), // declined: released
		held("d1", "rd", 100, queue.TicketState{}),                                                   // purged: held to its time
	}
	newTicket := func(id string, exclusive bool, players ...string) queue.TicketState {
		return queue.TicketState{ID: id, Queue: "casual", Status: queue.Searching, Exclusive: exclusive, Players: players}
	}
	created := queue.TicketsCreated{Tickets: []queue.TicketState{
		newTicket("x-a", true, "z1", "a1"), // a party with a claimed player
		newTicket("x-b", true, "b1"),
		newTicket("x-c", true, "c1"),
		newTicket("x-d", true, "d1"),
		newTicket("x-e", true, "e1"),        // no claim
		newTicket("s-a", false, "a1", "s1"), // a spectator's: not read, not cancelled
	}}
	var asked [][]string
	c, err := queue.Settle(&queue.Locked{}, sec(10), created, func(n queue.Need) queue.Reads {
		asked = append(asked, n.Players)
		var r queue.Reads
		for _, cl := range claims {
			if slices.Contains(n.Players, cl.Player) {
				r.Claims = append(r.Claims, cl)
			}
		}
		return r
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"a1", "b1", "c1", "d1", "e1", "z1"}}; !slices.EqualFunc(asked, want, slices.Equal) {
		t.Fatalf("read the players %v, want %v", asked, want)
	}
	var moved []string
	for _, tr := range c.Transitions {
		if tr.From != queue.Searching || tr.To != queue.Cancelled || tr.Reason != queue.ReasonMatchedElsewhere {
			t.Fatalf("a transition: %+v", tr)
		}
		moved = append(moved, tr.Ticket)
	}
	if want := []string{"x-a", "x-d"}; !slices.Equal(moved, want) {
		t.Fatalf("cancelled %v, want %v", moved, want)
	}
	if len(c.Events) != 2 || c.Events[0].Type != queue.EventCancelled || c.Events[0].Queue != "casual" ||
		c.Events[0].TicketID != "x-a" || c.Events[0].Reason != queue.ReasonMatchedElsewhere || !c.Events[0].At.Equal(sec(10)) {
		t.Fatalf("events: %+v", c.Events)
	}
	if got := c.Committed().Elsewhere["casual"]; got != 2 {
		t.Fatalf("counted %d matched elsewhere, want 2", got)
	}
	if len(c.Claims) != 0 || len(c.Matches) != 0 {
		t.Fatalf("a creation took claims or made matches: %+v", c)
	}
}

// TestLifecycleTicketsCreatedReadNothingWithoutExclusive: a creation of tickets that are not
// exclusive reads no claim and changes nothing.
func TestLifecycleTicketsCreatedReadNothingWithoutExclusive(t *testing.T) {
	created := queue.TicketsCreated{Tickets: []queue.TicketState{{ID: "s", Queue: "q", Status: queue.Searching, Players: []string{"a1"}}}}
	c, need, err := queue.Decide(&queue.Locked{}, sec(1), created)
	if err != nil || !need.Empty() || !c.Empty() {
		t.Fatalf("need %+v, change %+v, err %v", need, c, err)
	}
}
