package queuetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The contract of ownership and of the ready checks (queue/acceptance.go).

func testOwner(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	// A queue's ready check round-trips, and so does its removal.
	ready := Queue("ready")
	ready.Acceptance = &queue.Acceptance{Timeout: 20 * time.Second}
	putQueue(t, st, ready)
	if got := must[queue.Queue](t)(st.GetQueue(c, "ready")); got.Acceptance == nil || got.Acceptance.Timeout != 20*time.Second {
		t.Fatalf("the stored acceptance: %+v", got.Acceptance)
	}
	ready.Acceptance = nil
	putQueue(t, st, ready)
	if got := must[queue.Queue](t)(st.GetQueue(c, "ready")); got.Acceptance != nil {
		t.Fatalf("the acceptance after its removal: %+v", got.Acceptance)
	}
	a := Ticket("q", "t1", 1, "alice")
	a.Owner, a.IdempotencyKey, a.BodyHash = "studio-a", "k1", [32]byte{1}
	create(t, st, a)
	if got := must[queue.Ticket](t)(st.GetTicket(c, "t1")); got.Owner != "studio-a" {
		t.Fatalf("owner %q, want studio-a", got.Owner)
	}
	// Its events carry its owner, for the event stream to show each key its own.
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "t1", at(2)))
	if evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events; len(evs) != 1 || evs[0].Owner != "studio-a" {
		t.Fatalf("the cancel's event: %+v, want its ticket's owner", evs)
	}
	// The same idempotency key under another owner is another ticket.
	b := Ticket("q", "t2", 1, "bob")
	b.Owner, b.IdempotencyKey, b.BodyHash = "studio-b", "k1", [32]byte{2}
	if got := create(t, st, b); got.ID != "t2" || got.Owner != "studio-b" {
		t.Fatalf("the other owner's ticket: %+v", got)
	}
	// Under the same owner it replays (same body) or conflicts (another).
	again := Ticket("q", "t3", 1, "alice")
	again.Owner, again.IdempotencyKey, again.BodyHash = "studio-a", "k1", [32]byte{1}
	got, replayed, err := st.CreateTicket(c, again)
	if err != nil || !replayed || got.ID != "t1" {
		t.Fatalf("replay: %+v %v %v", got, replayed, err)
	}
	again.BodyHash = [32]byte{9}
	_, _, err = st.CreateTicket(c, again)
	wantCode(t, err, apperr.Conflict)
}

// proposalFixture is a queue with two searching parties, a (a1, a2) and b (b1, b2), proposed
// as one 2v2 at second 10, to be accepted by second 30.
func proposalFixture(t *testing.T, st queue.Store) (a, b queue.Ticket, m queue.Match) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	a = create(t, st, Ticket("q", "a", 1, "a1", "a2"))
	b = create(t, st, Ticket("q", "b", 2, "b1", "b2"))
	m = Match2v2("m1", a, b)
	m.Attributes = []matchpool.MatchAttribute{{Name: "maps", Value: matchrules.ListValue("dust", "nuke")}}
	done, err := queue.Propose(c, st, "q", queue.ProposeWrite{At: at(10), AcceptBy: at(30), Proposals: []queue.Match{m}})
	if err != nil || !slices.Equal(done.Matches, []string{"m1"}) {
		t.Fatalf("propose: %+v %v", done, err)
	}
	return a, b, m
}

func testProposeAccept(t *testing.T, st queue.Store) {
	c := ctx(t)
	a, b, m := proposalFixture(t, st)
	for i, id := range []string{"a", "b"} {
		tk := must[queue.Ticket](t)(st.GetTicket(c, id))
		if tk.Status != queue.Proposed || tk.Proposal == nil || tk.Proposal.MatchID != "m1" || tk.Proposal.Team != i ||
			!tk.Proposal.AcceptBy.Equal(at(30)) || len(tk.Proposal.Teams) != 2 || !tk.UpdatedAt.Equal(at(10)) ||
			len(tk.Proposal.Attributes) != 1 || !slices.Equal(tk.Proposal.Attributes[0].Value.List, []string{"dust", "nuke"}) {
			t.Fatalf("%s after the proposal: %+v %+v", id, tk, tk.Proposal)
		}
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events
	if len(evs) != 2 || evs[0].Type != queue.EventProposed || evs[0].MatchID != "m1" || evs[1].Team != 1 {
		t.Fatalf("events: %+v", evs)
	}
	// The proposal holds its players: no new ticket, no second proposal or match.
	_, _, err := st.CreateTicket(c, Ticket("q", "c", 11, "a1"))
	var se *queue.SearchingError
	if !errors.As(err, &se) || se.TicketID != "a" {
		t.Fatalf("a proposed player's new ticket: %v", err)
	}
	again := Match2v2("m2", a, b)
	done, err := queue.Propose(c, st, "q", queue.ProposeWrite{At: at(11), AcceptBy: at(31), Proposals: []queue.Match{again}})
	if err != nil || len(done.Matches) != 0 || !slices.Equal(done.Dropped, []string{"m2"}) {
		t.Fatalf("proposing proposed tickets again: %+v %v", done, err)
	}
	tick, err := queue.CommitTick(c, st, "q", queue.TickWrite{At: at(11), Matches: []queue.Match{Match2v2("m3", a, b)},
		Expired: []queue.Expiry{{TicketID: "a", Reason: "ttl"}}})
	if err != nil || len(tick.Matches)+len(tick.Expired) != 0 {
		t.Fatalf("a tick on proposed tickets: %+v %v", tick, err)
	}
	// The proposed tickets are not searching for the leader.
	if got := searchingOnly(changesAll(t, st)); len(got) != 0 {
		t.Fatalf("searching while proposed: %v", ticketIDs(got))
	}

	_, _, err = queue.AnswerProposal(c, st, "m1", "nobody", true, at(12))
	wantCode(t, err, apperr.NotFound)
	_, _, err = queue.AnswerProposal(c, st, "m-none", "a1", true, at(12))
	wantCode(t, err, apperr.NotFound)
	for i, p := range []string{"a1", "a2", "b1", "a1"} { // a1 twice: the same answer again changes nothing
		got, resolved, err := queue.AnswerProposal(c, st, "m1", p, true, at(12+i))
		if err != nil || resolved || got.State != queue.ProposalOpen || !got.Answers[p] {
			t.Fatalf("answer %d (%s): %+v %v %v", i, p, got, resolved, err)
		}
	}
	got, resolved, err := queue.AnswerProposal(c, st, "m1", "b2", true, at(20))
	if err != nil || !resolved || got.State != queue.ProposalAccepted || !got.ResolvedAt.Equal(at(20)) {
		t.Fatalf("the last answer: %+v %v %v", got, resolved, err)
	}
	for _, id := range []string{"a", "b"} {
		tk := must[queue.Ticket](t)(st.GetTicket(c, id))
		if tk.Status != queue.Matched || tk.Assignment == nil || tk.Assignment.MatchID != "m1" || tk.Proposal != nil {
			t.Fatalf("%s after all accepted: %+v", id, tk)
		}
	}
	if mt := must[queue.Match](t)(st.GetMatch(c, "m1")); mt.Queue != "q" || len(mt.Teams) != 2 || len(mt.Pairs) != len(m.Pairs) {
		t.Fatalf("the accepted match: %+v", mt)
	}
	evs = must[queue.EventPage](t)(st.Events(c, "q", 2, 10, false)).Events
	if len(evs) != 2 || evs[0].Type != queue.EventMatched || evs[1].Type != queue.EventMatched || evs[0].MatchID != "m1" {
		t.Fatalf("events after acceptance: %+v", evs)
	}
	_, _, err = queue.AnswerProposal(c, st, "m1", "a1", false, at(21))
	wantCode(t, err, apperr.Conflict)
	if p := must[queue.Proposal](t)(st.GetProposal(c, "m1")); p.State != queue.ProposalAccepted || len(p.Answers) != 4 {
		t.Fatalf("the resolved proposal: %+v", p)
	}
	// Their players are free again.
	create(t, st, Ticket("q", "c", 30, "a1"))
}

func testProposalDeclined(t *testing.T, st queue.Store) {
	c := ctx(t)
	a, _, _ := proposalFixture(t, st)
	must[queue.Proposal](t)(func() (queue.Proposal, error) {
		p, _, err := queue.AnswerProposal(c, st, "m1", "b1", true, at(11))
		return p, err
	}())
	got, resolved, err := queue.AnswerProposal(c, st, "m1", "a2", false, at(12))
	if err != nil || !resolved || got.State != queue.ProposalDeclined {
		t.Fatalf("decline: %+v %v %v", got, resolved, err)
	}
	ta := must[queue.Ticket](t)(st.GetTicket(c, "a"))
	if ta.Status != queue.Cancelled || ta.Reason != queue.ReasonDeclined || ta.Proposal != nil {
		t.Fatalf("the decliner's ticket: %+v", ta)
	}
	tb := must[queue.Ticket](t)(st.GetTicket(c, "b"))
	if tb.Status != queue.Searching || tb.Proposal != nil || !tb.CreatedAt.Equal(at(2)) || !tb.UpdatedAt.Equal(at(12)) {
		t.Fatalf("the other ticket: %+v", tb)
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 2, 10, false)).Events
	if len(evs) != 2 || evs[0].Type != queue.EventCancelled || evs[0].TicketID != "a" || evs[0].Reason != queue.ReasonDeclined ||
		evs[1].Type != queue.EventRequeued || evs[1].TicketID != "b" || evs[1].MatchID != "m1" || evs[1].Reason != queue.ReasonDeclined {
		t.Fatalf("events: %+v", evs)
	}
	// b searches again (the leader sees it), and its players cannot make a second ticket.
	if got := searchingOnly(changesAll(t, st)); !slices.Equal(ticketIDs(got), []string{"b"}) {
		t.Fatalf("searching after the decline: %v", ticketIDs(got))
	}
	_, _, err = st.CreateTicket(c, Ticket("q", "x", 13, "b1"))
	wantCode(t, err, apperr.Conflict)
	create(t, st, Ticket("q", "y", 13, "a1")) // a's players are free
	_ = a
	// b can be matched at the next tick; no match with m1's id is stored.
	_, err = st.GetMatch(c, "m1")
	wantCode(t, err, apperr.NotFound)
	c2 := create(t, st, Ticket("q", "c", 14, "c1", "c2"))
	done := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "q", queue.TickWrite{At: at(15), Matches: []queue.Match{Match2v2("m2", tb, c2)}}))
	if !slices.Equal(done.Matches, []string{"m2"}) {
		t.Fatalf("the requeued ticket's next match: %+v", done)
	}
}

func testProposalTimeout(t *testing.T, st queue.Store) {
	c := ctx(t)
	proposalFixture(t, st)
	for _, p := range []string{"a1", "a2", "b1"} {
		if _, _, err := queue.AnswerProposal(c, st, "m1", p, true, at(11)); err != nil {
			t.Fatal(err)
		}
	}
	resolved, open, err := queue.ExpireProposals(c, st, "q", at(29))
	if err != nil || len(resolved) != 0 || open != 1 {
		t.Fatalf("before the deadline: %+v open %d, %v", resolved, open, err)
	}
	resolved, open, err = queue.ExpireProposals(c, st, "q", at(30))
	if err != nil || len(resolved) != 1 || open != 0 || resolved[0].State != queue.ProposalTimedOut || resolved[0].Match.ID != "m1" {
		t.Fatalf("at the deadline: %+v open %d, %v", resolved, open, err)
	}
	if tb := must[queue.Ticket](t)(st.GetTicket(c, "b")); tb.Status != queue.Cancelled || tb.Reason != queue.ReasonAcceptanceTimeout {
		t.Fatalf("the silent player's ticket: %+v", tb)
	}
	if ta := must[queue.Ticket](t)(st.GetTicket(c, "a")); ta.Status != queue.Searching || !ta.CreatedAt.Equal(at(1)) {
		t.Fatalf("the ticket that accepted: %+v", ta)
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 2, 10, false)).Events
	if len(evs) != 2 || evs[0].Reason != queue.ReasonAcceptanceTimeout || evs[1].Type != queue.EventRequeued {
		t.Fatalf("events: %+v", evs)
	}
	// Resolved once: a later expiry or answer changes nothing.
	if resolved, _, err := queue.ExpireProposals(c, st, "q", at(40)); err != nil || len(resolved) != 0 {
		t.Fatalf("a second expiry: %+v %v", resolved, err)
	}
	_, _, err = queue.AnswerProposal(c, st, "m1", "b2", true, at(41))
	wantCode(t, err, apperr.Conflict)
}

func testCancelDissolves(t *testing.T, st queue.Store) {
	c := ctx(t)
	proposalFixture(t, st)
	tk, err := queue.CancelTicket(c, st, "b", at(12))
	if err != nil || tk.Status != queue.Cancelled || tk.Reason != "cancelled" {
		t.Fatalf("cancel a proposed ticket: %+v %v", tk, err)
	}
	if ta := must[queue.Ticket](t)(st.GetTicket(c, "a")); ta.Status != queue.Searching {
		t.Fatalf("the other ticket: %+v", ta)
	}
	if p := must[queue.Proposal](t)(st.GetProposal(c, "m1")); p.State != queue.ProposalDeclined {
		t.Fatalf("the proposal: %+v", p)
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 2, 10, false)).Events
	if len(evs) != 2 || evs[0].Type != queue.EventCancelled || evs[0].Reason != "cancelled" ||
		evs[1].Type != queue.EventRequeued || evs[1].Reason != queue.ReasonCancelled {
		t.Fatalf("events: %+v", evs)
	}
	_, _, err = queue.AnswerProposal(c, st, "m1", "a1", true, at(13))
	wantCode(t, err, apperr.Conflict)
}

func testDeleteQueueWithProposal(t *testing.T, st queue.Store) {
	c := ctx(t)
	proposalFixture(t, st)
	if err := queue.DeleteQueue(c, st, "q", at(12)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if tk := must[queue.Ticket](t)(st.GetTicket(c, id)); tk.Status != queue.Cancelled || tk.Proposal != nil {
			t.Fatalf("%s after its queue was deleted: %+v", id, tk)
		}
	}
	// The proposal resolves without touching its cancelled tickets.
	for _, p := range []string{"a1", "a2", "b1", "b2"} {
		if _, _, err := queue.AnswerProposal(c, st, "m1", p, true, at(13)); err != nil {
			t.Fatal(err)
		}
	}
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "a")); tk.Status != queue.Cancelled {
		t.Fatalf("a cancelled ticket after its proposal was accepted: %+v", tk)
	}
}

func changesAll(t *testing.T, st queue.Store) []queue.Ticket {
	t.Helper()
	ts, _ := must2(t)(st.Changes(ctx(t), queue.Queue{Name: "q"}, "", 0))
	return ts
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func testPlacement(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	a := create(t, st, Ticket("q", "a", 1, "a1", "a2"))
	b := create(t, st, Ticket("q", "b", 2, "b1", "b2"))
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "q", queue.TickWrite{At: at(5), Matches: []queue.Match{Match2v2("m1", a, b)}}))
	_, err := queue.PlaceMatch(c, st, "nope", []byte(`{"address":"x"}`), at(6))
	wantCode(t, err, apperr.NotFound)
	_, err = st.MatchConnection(c, "nope")
	wantCode(t, err, apperr.NotFound)
	if conn := must[json.RawMessage](t)(st.MatchConnection(c, "m1")); conn != nil {
		t.Fatalf("the connection of a match not placed: %s", conn)
	}
	for i, conn := range []string{`{"address":"10.0.0.7","port":7777}`, `{"address":"10.0.0.8","port":7778,"token":"t"}`} {
		m, err := queue.PlaceMatch(c, st, "m1", []byte(conn), at(6+i))
		if err != nil || !sameJSON(t, m.Connection, []byte(conn)) {
			t.Fatalf("place %d: %s %v", i, m.Connection, err)
		}
		if got := must[queue.Match](t)(st.GetMatch(c, "m1")); !sameJSON(t, got.Connection, []byte(conn)) {
			t.Fatalf("the stored match's connection %d: %s", i, got.Connection)
		}
		if got := must[json.RawMessage](t)(st.MatchConnection(c, "m1")); !sameJSON(t, got, []byte(conn)) {
			t.Fatalf("the match's connection %d alone: %s", i, got)
		}
		for _, id := range []string{"a", "b"} {
			tk := must[queue.Ticket](t)(st.GetTicket(c, id))
			if tk.Status != queue.Matched || tk.Assignment == nil || !sameJSON(t, tk.Assignment.Connection, []byte(conn)) || tk.Assignment.MatchID != "m1" {
				t.Fatalf("%s after placement %d: %+v", id, i, tk.Assignment)
			}
		}
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 2, 10, false)).Events
	if len(evs) != 4 || evs[0].Type != queue.EventPlaced || evs[0].MatchID != "m1" || evs[1].Team != 1 || evs[3].Seq != 6 {
		t.Fatalf("events: %+v", evs)
	}
}

func testAllocatorPlacement(t *testing.T, st queue.Store) {
	putQueue(t, st, Queue("q"))
	testPlacingAtOnce(t, st)
	testPlacingAfterAReadyCheck(t, st)
}

// testPlacingAtOnce: without a ready check, a proposal is placing at once; the allocator's
// answer makes its match.
func testPlacingAtOnce(t *testing.T, st queue.Store) {
	c := ctx(t)
	a := create(t, st, Ticket("q", "a", 1, "a1", "a2"))
	b := create(t, st, Ticket("q", "b", 2, "b1", "b2"))
	// Without a ready check, a match is placing at once.
	done := must[queue.TickCommitted](t)(queue.Propose(c, st, "q", queue.ProposeWrite{At: at(10), AcceptBy: at(40), PlaceFor: 30 * time.Second,
		Placing: true, Proposals: []queue.Match{Match2v2("m1", a, b)}}))
	if len(done.Matches) != 1 {
		t.Fatalf("placing: %+v", done)
	}
	for _, id := range []string{"a", "b"} {
		tk := must[queue.Ticket](t)(st.GetTicket(c, id))
		if tk.Status != queue.Placing || tk.Proposal == nil || !tk.Proposal.AcceptBy.Equal(at(40)) {
			t.Fatalf("%s while placing: %+v", id, tk)
		}
	}
	if evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events; len(evs) != 0 {
		t.Fatalf("events of a placement under way: %+v", evs)
	}
	if ps := must[[]queue.Proposal](t)(st.PlacingProposals(c, "q")); len(ps) != 1 || ps[0].Match.ID != "m1" || ps[0].PlaceFor != 30*time.Second {
		t.Fatalf("placing proposals: %+v", ps)
	}
	_, _, err := st.CreateTicket(c, Ticket("q", "x", 11, "a1"))
	wantCode(t, err, apperr.Conflict)
	_, err = queue.CancelTicket(c, st, "a", at(11))
	wantCode(t, err, apperr.Conflict)
	_, _, err = queue.AnswerProposal(c, st, "m1", "a1", true, at(11))
	wantCode(t, err, apperr.Conflict)
	conn := []byte(`{"address":"10.0.0.7","port":7777}`)
	p, err := queue.CompletePlacement(c, st, "m1", conn, at(12))
	if err != nil || p.State != queue.ProposalAccepted {
		t.Fatalf("placed: %+v %v", p, err)
	}
	for _, id := range []string{"a", "b"} {
		tk := must[queue.Ticket](t)(st.GetTicket(c, id))
		if tk.Status != queue.Matched || tk.Proposal != nil || tk.Assignment == nil || !sameJSON(t, tk.Assignment.Connection, conn) {
			t.Fatalf("%s once placed: %+v %+v", id, tk, tk.Assignment)
		}
	}
	if m := must[queue.Match](t)(st.GetMatch(c, "m1")); !sameJSON(t, m.Connection, conn) {
		t.Fatalf("the placed match: %s", m.Connection)
	}
	if evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events; len(evs) != 2 || evs[0].Type != queue.EventMatched {
		t.Fatalf("events once placed: %+v", evs)
	}
	_, err = queue.CompletePlacement(c, st, "m1", conn, at(13))
	wantCode(t, err, apperr.Conflict)
	if ps := must[[]queue.Proposal](t)(st.PlacingProposals(c, "q")); len(ps) != 0 {
		t.Fatalf("placing proposals after: %+v", ps)
	}

}

// testPlacingAfterAReadyCheck: with a ready check, placing once all accepted; a placement past
// its deadline fails and requeues everyone, one that fails requeues with its reason.
func testPlacingAfterAReadyCheck(t *testing.T, st queue.Store) {
	c := ctx(t)
	c1 := create(t, st, Ticket("q", "c", 20, "c1"))
	d1 := create(t, st, Ticket("q", "d", 21, "d1"))
	must[queue.TickCommitted](t)(queue.Propose(c, st, "q", queue.ProposeWrite{At: at(22), AcceptBy: at(42), PlaceFor: 30 * time.Second,
		Proposals: []queue.Match{Match2v2("m2", c1, d1)}}))
	must[queue.Proposal](t)(func() (queue.Proposal, error) {
		p, _, err := queue.AnswerProposal(c, st, "m2", "c1", true, at(23))
		return p, err
	}())
	p, resolved, err := queue.AnswerProposal(c, st, "m2", "d1", true, at(24))
	if err != nil || !resolved || p.State != queue.ProposalPlacing || !p.AcceptBy.Equal(at(54)) {
		t.Fatalf("all accepted, placing: %+v %v %v", p, resolved, err)
	}
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "c")); tk.Status != queue.Placing || !tk.Proposal.AcceptBy.Equal(at(54)) {
		t.Fatalf("c placing: %+v", tk)
	}
	if res, open, err := queue.ExpireProposals(c, st, "q", at(53)); err != nil || len(res) != 0 || open != 1 {
		t.Fatalf("before the placement's deadline: %+v %d %v", res, open, err)
	}
	res, open, err := queue.ExpireProposals(c, st, "q", at(54))
	if err != nil || len(res) != 1 || res[0].State != queue.ProposalFailed || open != 0 {
		t.Fatalf("at the placement's deadline: %+v %d %v", res, open, err)
	}
	for _, id := range []string{"c", "d"} {
		if tk := must[queue.Ticket](t)(st.GetTicket(c, id)); tk.Status != queue.Searching || tk.Proposal != nil {
			t.Fatalf("%s after the placement timed out: %+v", id, tk)
		}
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 2, 20, false)).Events
	if n := len(evs); n != 4 || evs[2].Type != queue.EventRequeued || evs[3].Reason != queue.ReasonPlacementTimeout {
		t.Fatalf("events after the timeout: %+v", evs)
	}
	must[queue.TickCommitted](t)(queue.Propose(c, st, "q", queue.ProposeWrite{At: at(60), AcceptBy: at(90), PlaceFor: 30 * time.Second,
		Placing: true, Proposals: []queue.Match{Match2v2("m3", c1, d1)}}))
	if p, err := queue.FailPlacement(c, st, "m3", "placement_failed: no server", at(61)); err != nil || p.State != queue.ProposalFailed {
		t.Fatalf("fail: %+v %v", p, err)
	}
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "d")); tk.Status != queue.Searching {
		t.Fatalf("d after the placement failed: %+v", tk)
	}
	evs = must[queue.EventPage](t)(st.Events(c, "q", 6, 20, false)).Events
	if len(evs) != 2 || evs[0].Reason != "placement_failed: no server" {
		t.Fatalf("events after the failure: %+v", evs)
	}
	_, err = queue.FailPlacement(c, st, "m3", "again", at(62))
	wantCode(t, err, apperr.Conflict)
}
