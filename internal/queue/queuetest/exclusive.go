package queuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The players across queues (internal/queue/lifecycle_claims.go): a store keeps each
// player's claim and hands the lifecycle his live tickets in every queue.

// exclusive is Ticket made exclusive, as the Service makes tickets.
func exclusive(queueName, id string, s int, players ...string) queue.Ticket {
	t := Ticket(queueName, id, s, players...)
	t.Exclusive = true
	return t
}

// twoQueues is queues "ranked" and "casual", with a1, a2 searching in both (a party of two:
// ranked's ra, casual's ca), b1, b2 in ranked (rb) and c1, c2 in casual (cc).
func twoQueues(t *testing.T, st queue.Store) (ra, rb, ca, cc queue.Ticket) {
	putQueue(t, st, Queue("ranked"))
	putQueue(t, st, Queue("casual"))
	ra = create(t, st, exclusive("ranked", "ra", 1, "a1", "a2"))
	rb = create(t, st, exclusive("ranked", "rb", 1, "b1", "b2"))
	ca = create(t, st, exclusive("casual", "ca", 1, "a1", "a2"))
	cc = create(t, st, exclusive("casual", "cc", 1, "c1", "c2"))
	return ra, rb, ca, cc
}

func status(t *testing.T, st queue.Store, id string) (queue.Status, string) {
	t.Helper()
	tk := must[queue.Ticket](t)(st.GetTicket(ctx(t), id))
	return tk.Status, tk.Reason
}

// testMatchedCancelsElsewhere: a match in one queue cancels its players' searching tickets
// in the other in the same commit, with an event in that queue; a match there with them is
// then dropped, and one with a player still claimed is refused: his ticket cancelled, the
// rest searching.
func testMatchedCancelsElsewhere(t *testing.T, st queue.Store) {
	c := ctx(t)
	ra, rb, ca, cc := twoQueues(t, st)
	done := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "ranked", queue.TickWrite{At: at(10), Matches: []queue.Match{Match2v2("m1", ra, rb)}}))
	if !slices.Equal(done.Matches, []string{"m1"}) || done.Elsewhere["casual"] != 1 {
		t.Fatalf("ranked's commit: %+v", done)
	}
	if s, r := status(t, st, "ca"); s != queue.Cancelled || r != queue.ReasonMatchedElsewhere {
		t.Fatalf("casual's ticket of the matched party: %s %q", s, r)
	}
	evs := must[queue.EventPage](t)(st.Events(c, "casual", 0, 10, false)).Events
	if len(evs) != 1 || evs[0].Type != queue.EventCancelled || evs[0].TicketID != "ca" || evs[0].Reason != queue.ReasonMatchedElsewhere {
		t.Fatalf("casual's events: %+v", evs)
	}
	// The other queue's leader, behind: its match of the cancelled ticket is dropped.
	done = must[queue.TickCommitted](t)(queue.CommitTick(c, st, "casual", queue.TickWrite{At: at(11), Matches: []queue.Match{Match2v2("m2", ca, cc)}}))
	if len(done.Matches) != 0 || !slices.Equal(done.Dropped, []string{"m2"}) {
		t.Fatalf("casual's commit of the cancelled ticket: %+v", done)
	}
	// a1 searches casual again while m1 is live: his new ticket is cancelled by the claim as
	// it is created (testCreatedWhileClaimed), and a match of it dropped.
	ca2 := create(t, st, exclusive("casual", "ca2", 12, "a1"))
	if ca2.Status != queue.Cancelled || ca2.Reason != queue.ReasonMatchedElsewhere {
		t.Fatalf("the claimed player's new ticket: %s %q", ca2.Status, ca2.Reason)
	}
	cc3 := create(t, st, exclusive("casual", "cc3", 12, "d1"))
	m3 := Match2v2("m3", ca2, cc3)
	done = must[queue.TickCommitted](t)(queue.CommitTick(c, st, "casual", queue.TickWrite{At: at(13), Matches: []queue.Match{m3}}))
	if len(done.Matches) != 0 || !slices.Equal(done.Dropped, []string{"m3"}) || done.Claimed != 0 {
		t.Fatalf("casual's commit of a claimed player: %+v", done)
	}
	if s, _ := status(t, st, "cc3"); s != queue.Searching {
		t.Fatalf("the other ticket of the refused match: %s", s)
	}
	if s, _ := status(t, st, "cc"); s != queue.Searching {
		t.Fatalf("casual's untouched ticket: %s", s)
	}
}

// testClaimEndsWithItsTime: a claim holds for the write's ClaimFor after its match; then its
// player is matched again elsewhere. A ticket created once the claim ended by its creation's
// clock, ahead of the leader's, is refused by a tick that is still within the claim: its
// ticket cancelled, the match dropped.
func testClaimEndsWithItsTime(t *testing.T, st queue.Store) {
	c := ctx(t)
	ra, rb, _, _ := twoQueues(t, st)
	w := queue.TickWrite{At: at(10), ClaimFor: time.Minute, Matches: []queue.Match{Match2v2("m1", ra, rb)}}
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "ranked", w))
	x := create(t, st, exclusive("casual", "x", 70, "a1"))
	y := create(t, st, exclusive("casual", "y", 20, "y1"))
	if x.Status != queue.Searching {
		t.Fatalf("a ticket created at the claim's end: %s %q", x.Status, x.Reason)
	}
	done := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "casual", queue.TickWrite{At: at(69), Matches: []queue.Match{Match2v2("m2", x, y)}}))
	if done.Claimed != 1 || done.Elsewhere["casual"] != 1 {
		t.Fatalf("within the claim: %+v", done)
	}
	if s, r := status(t, st, "x"); s != queue.Cancelled || r != queue.ReasonMatchedElsewhere {
		t.Fatalf("the refused ticket: %s %q", s, r)
	}
	x = create(t, st, exclusive("casual", "x2", 70, "a1"))
	done = must[queue.TickCommitted](t)(queue.CommitTick(c, st, "casual", queue.TickWrite{At: at(71), Matches: []queue.Match{Match2v2("m3", x, y)}}))
	if !slices.Equal(done.Matches, []string{"m3"}) {
		t.Fatalf("after the claim's time: %+v", done)
	}
}

// testProposalClaims: a proposal claims its players as a match does (their tickets elsewhere
// cancelled); declined, it releases them at once, and the match that claims them then
// cancels their requeued tickets.
func testProposalClaims(t *testing.T, st queue.Store) {
	c := ctx(t)
	ra, rb, _, cc := twoQueues(t, st)
	done := must[queue.TickCommitted](t)(queue.Propose(c, st, "ranked", queue.ProposeWrite{At: at(10), AcceptBy: at(30),
		Proposals: []queue.Match{Match2v2("p1", ra, rb)}}))
	if !slices.Equal(done.Matches, []string{"p1"}) || done.Elsewhere["casual"] != 1 {
		t.Fatalf("propose: %+v", done)
	}
	if s, r := status(t, st, "ca"); s != queue.Cancelled || r != queue.ReasonMatchedElsewhere {
		t.Fatalf("casual's ticket of the proposed party: %s %q", s, r)
	}
	if x := create(t, st, exclusive("casual", "x", 11, "a1")); x.Status != queue.Cancelled || x.Reason != queue.ReasonMatchedElsewhere {
		t.Fatalf("a ticket of a player proposed elsewhere: %s %q", x.Status, x.Reason)
	}
	if _, _, err := queue.AnswerProposal(c, st, "p1", "b1", false, at(13)); err != nil {
		t.Fatal(err)
	}
	x := create(t, st, exclusive("casual", "x2", 14, "a1"))
	done = must[queue.TickCommitted](t)(queue.CommitTick(c, st, "casual", queue.TickWrite{At: at(15), Matches: []queue.Match{Match2v2("m3", x, cc)}}))
	if !slices.Equal(done.Matches, []string{"m3"}) {
		t.Fatalf("after the decline: %+v", done)
	}
	// a1's ranked ticket, requeued by the decline, was cancelled by m3.
	if s, r := status(t, st, "ra"); s != queue.Cancelled || r != queue.ReasonMatchedElsewhere {
		t.Fatalf("the requeued ticket of a player matched since: %s %q", s, r)
	}
}

// testNotExclusive: a ticket that is not exclusive neither takes a claim (its player's other
// tickets stay) nor meets one, nor is cancelled by one.
func testNotExclusive(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("ranked"))
	putQueue(t, st, Queue("spectate"))
	ra := create(t, st, exclusive("ranked", "ra", 1, "a1"))
	rb := create(t, st, exclusive("ranked", "rb", 1, "b1"))
	sa := create(t, st, Ticket("spectate", "sa", 1, "a1"))
	sb := create(t, st, Ticket("spectate", "sb", 1, "b1"))
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "ranked", queue.TickWrite{At: at(10), Matches: []queue.Match{Match2v2("m1", ra, rb)}}))
	if s, _ := status(t, st, "sa"); s != queue.Searching {
		t.Fatalf("a spectator ticket of a player matched elsewhere: %s", s)
	}
	done := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "spectate", queue.TickWrite{At: at(11), Matches: []queue.Match{Match2v2("m2", sa, sb)}}))
	if !slices.Equal(done.Matches, []string{"m2"}) || done.Claimed != 0 {
		t.Fatalf("the spectators' match: %+v", done)
	}
	// Nor did the spectators' match claim them: c1 matched in spectate, then in ranked.
	sc := create(t, st, Ticket("spectate", "sc", 12, "c1"))
	sd := create(t, st, Ticket("spectate", "sd", 12, "d1"))
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "spectate", queue.TickWrite{At: at(13), Matches: []queue.Match{Match2v2("m3", sc, sd)}}))
	rc := create(t, st, exclusive("ranked", "rc", 14, "c1"))
	rd := create(t, st, exclusive("ranked", "rd", 14, "d1"))
	done = must[queue.TickCommitted](t)(queue.CommitTick(c, st, "ranked", queue.TickWrite{At: at(15), Matches: []queue.Match{Match2v2("m4", rc, rd)}}))
	if !slices.Equal(done.Matches, []string{"m4"}) {
		t.Fatalf("after a spectators' match: %+v", done)
	}
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "rc")); !tk.Exclusive {
		t.Fatal("the exclusive flag was not stored")
	}
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "sc")); tk.Exclusive {
		t.Fatal("a ticket stored exclusive that was not")
	}
}

// testResultEndsClaims: a match's result ends its players' claims (EndClaims) before their
// time: matched again elsewhere at once; another match's claims stay.
func testResultEndsClaims(t *testing.T, st queue.Store) {
	c := ctx(t)
	ra, rb, ca, cc := twoQueues(t, st)
	_ = ca
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "ranked", queue.TickWrite{At: at(10), Matches: []queue.Match{Match2v2("m1", ra, rb)}}))
	if ended, err := st.EndClaims(c, "other-match", at(12), true); err != nil || ended {
		t.Fatalf("ending another match's claims: ended %v, %v", ended, err)
	}
	if x := create(t, st, exclusive("casual", "x", 13, "a1")); x.Status != queue.Cancelled {
		t.Fatalf("another match's result ended a1's claim: his new ticket is %s", x.Status)
	}
	if ended, err := st.EndClaims(c, "m1", at(14), false); err != nil || !ended {
		t.Fatalf("ending m1's claims: ended %v, %v", ended, err)
	}
	if ended, err := st.EndClaims(c, "m1", at(14), true); err != nil || ended {
		t.Fatalf("ending m1's claims again: ended %v, %v", ended, err)
	}
	x := create(t, st, exclusive("casual", "x2", 15, "a1"))
	done := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "casual", queue.TickWrite{At: at(16), Matches: []queue.Match{Match2v2("m3", x, cc)}}))
	if !slices.Equal(done.Matches, []string{"m3"}) {
		t.Fatalf("after m1's result: %+v", done)
	}
}

// testCreatedWhileClaimed: an exclusive ticket created while one of its players holds a live
// claim, in another queue's match or in its own queue's, is stored cancelled
// matched_elsewhere, with its event, and holds no player (he may queue again at once); a
// ticket of the same players that is not exclusive, and one of a player without a claim,
// search.
func testCreatedWhileClaimed(t *testing.T, st queue.Store) {
	c := ctx(t)
	ra, rb, _, _ := twoQueues(t, st)
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "ranked", queue.TickWrite{At: at(10), Matches: []queue.Match{Match2v2("m1", ra, rb)}}))
	x := create(t, st, exclusive("casual", "x", 11, "a1", "z1"))
	if x.Status != queue.Cancelled || x.Reason != queue.ReasonMatchedElsewhere || !x.UpdatedAt.Equal(at(11)) {
		t.Fatalf("the answer to a claimed player's creation: %s %q at %v", x.Status, x.Reason, x.UpdatedAt)
	}
	if s, r := status(t, st, "x"); s != queue.Cancelled || r != queue.ReasonMatchedElsewhere {
		t.Fatalf("the claimed player's ticket as stored: %s %q", s, r)
	}
	evs := must[queue.EventPage](t)(st.Events(c, "casual", 0, 10, false)).Events
	if e := evs[len(evs)-1]; e.Type != queue.EventCancelled || e.TicketID != "x" || e.Reason != queue.ReasonMatchedElsewhere {
		t.Fatalf("casual's last event: %+v", e)
	}
	if y := create(t, st, exclusive("ranked", "y", 12, "b1")); y.Status != queue.Cancelled || y.Reason != queue.ReasonMatchedElsewhere {
		t.Fatalf("a claimed player's new ticket in the claim's own queue: %s %q", y.Status, y.Reason)
	}
	if s := create(t, st, Ticket("casual", "s", 13, "a1", "z1")); s.Status != queue.Searching {
		t.Fatalf("a ticket of the claimed players that is not exclusive: %s %q", s.Status, s.Reason)
	}
	if z := create(t, st, exclusive("ranked", "z", 13, "z1")); z.Status != queue.Searching {
		t.Fatalf("the ticket of a player without a claim: %s %q", z.Status, z.Reason)
	}
	changed, _ := must2(t)(st.Changes(c, queue.Queue{Name: "casual"}, "", 0))
	for _, tk := range changed {
		if tk.ID == "x" && tk.Status != queue.Cancelled {
			t.Fatalf("the leader's view of the cancelled creation: %s", tk.Status)
		}
	}
}
