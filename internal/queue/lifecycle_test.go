package queue_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The lifecycle's tables: what is stored, what happens, and what must follow (the tickets'
// moves, the events in their order, the matches dropped), with no store at all.

var epoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func sec(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

// world is what a store holds: every ticket, proposal and match, by id.
type world struct {
	tickets   []queue.TicketState
	proposals []queue.Proposal
	matches   []queue.Match
}

// decide answers the lifecycle's needs from w until it decides, as a store does, and says
// what it was asked to read, in order. locked, when set, is what the call locks before it
// asks (a queue's live tickets, the proposals due).
func (w world) decide(at time.Time, cause queue.Cause, locked func(w world, l *queue.Locked)) (queue.Change, []queue.Need, error) {
	var l queue.Locked
	if locked != nil {
		locked(w, &l)
	}
	var asked []queue.Need
	for range 10 {
		c, need, err := queue.Decide(&l, at, cause)
		if err != nil || need.Empty() {
			return c, asked, err
		}
		asked = append(asked, need)
		var ts []queue.TicketState
		var ps []queue.Proposal
		var ms []queue.Match
		for _, t := range w.tickets {
			if slices.Contains(need.Tickets, t.ID) {
				ts = append(ts, t)
			}
		}
		for _, p := range w.proposals {
			if slices.Contains(need.Proposals, p.Match.ID) {
				ps = append(ps, p)
			}
		}
		for _, m := range w.matches {
			if slices.Contains(need.Matches, m.ID) {
				ms = append(ms, m)
			}
		}
		l.Read(need, ts, ps, ms)
	}
	panic("the lifecycle keeps asking")
}

func live(id string) queue.TicketState {
	return queue.TicketState{ID: id, Queue: "q", Status: queue.Searching}
}

func inProposal(id, in string) queue.TicketState {
	return queue.TicketState{ID: id, Queue: "q", Status: queue.Proposed, Proposal: in}
}

func beingPlaced(id, in string) queue.TicketState {
	return queue.TicketState{ID: id, Queue: "q", Status: queue.Placing, Proposal: in}
}

// match is a 1v1 (a player of ticket a against one of ticket b), or with more tickets, a
// team per ticket.
func match1v1(id string, tickets ...string) queue.Match {
	m := queue.Match{ID: id, Queue: "q", Region: "eu", CreatedAt: sec(1)}
	for _, t := range tickets {
		m.Teams = append(m.Teams, queue.MatchTeam{Players: []queue.MatchPlayer{{ID: "p" + t, TicketID: t, Rating: 1000}}})
	}
	return m
}

func proposalOf(m queue.Match, state queue.ProposalState, acceptBy time.Time, answers map[string]bool) queue.Proposal {
	if answers == nil {
		answers = map[string]bool{}
	}
	return queue.Proposal{Match: m, AcceptBy: acceptBy, Answers: answers, State: state}
}

// The summaries the tables compare.

func moves(c queue.Change) []string {
	var out []string
	for _, tr := range c.Transitions {
		s := fmt.Sprintf("%s %s->%s", tr.Ticket, tr.From, tr.To)
		if tr.Reason != "" {
			s += " (" + tr.Reason + ")"
		}
		out = append(out, s)
	}
	return out
}

func events(c queue.Change) []string {
	var out []string
	for _, e := range c.Events {
		s := fmt.Sprintf("%s %s", e.Type, e.TicketID)
		if e.MatchID != "" {
			s += fmt.Sprintf(" %s/%d", e.MatchID, e.Team)
		}
		if e.Reason != "" {
			s += " (" + e.Reason + ")"
		}
		if !e.At.Equal(c.At) || e.Queue != "q" {
			s += " at " + e.At.String() + " in " + e.Queue
		}
		out = append(out, s)
	}
	return out
}

func drops(c queue.Change) []string {
	var out []string
	for _, d := range c.Dropped {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", d.Match, d.Reason, d.Ticket)))
	}
	return out
}

func proposalStates(c queue.Change) []string {
	var out []string
	for _, p := range c.NewProposals {
		out = append(out, "new "+p.Match.ID+" "+string(p.State))
	}
	for _, p := range c.Proposals {
		out = append(out, p.Match.ID+" "+string(p.State))
	}
	return out
}

func matchIDs(ms []queue.Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// lifecycleCase is one row: a world, a cause, and what must follow.
type lifecycleCase struct {
	name      string
	w         world
	cause     queue.Cause
	locked    func(w world, l *queue.Locked)
	code      apperr.Code // an error of this code, nothing changed
	moves     []string
	events    []string
	dropped   []string
	matches   []string // stored
	proposals []string // stored new, or changed
}

func (tc lifecycleCase) run(t *testing.T) queue.Change {
	t.Helper()
	c, _, err := tc.w.decide(sec(10), tc.cause, tc.locked)
	if tc.code != "" {
		if apperr.CodeOf(err) != tc.code || !c.Empty() {
			t.Fatalf("%v (%s), change %+v; want a %s error and no change", err, apperr.CodeOf(err), c, tc.code)
		}
		return c
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []struct {
		what      string
		got, want []string
	}{
		{"moves", moves(c), tc.moves}, {"events", events(c), tc.events}, {"dropped", drops(c), tc.dropped},
		{"matches", matchIDs(c.Matches), tc.matches}, {"proposals", proposalStates(c), tc.proposals},
	} {
		if !slices.Equal(got.got, got.want) {
			t.Errorf("%s:\n got %q\nwant %q", got.what, got.got, got.want)
		}
	}
	return c
}

func TestLifecycleTick(t *testing.T) {
	t.Parallel()
	fill := match1v1("f1", "bf", "j")
	fill.BackfillOf, fill.BackfillTicket = "running", "bf"
	for _, tc := range []lifecycleCase{{
		name:    "a match of searching tickets is made",
		w:       world{tickets: []queue.TicketState{live("a"), live("b")}},
		cause:   queue.TickMatches{Queue: "q", Write: queue.TickWrite{Matches: []queue.Match{match1v1("m1", "a", "b")}}},
		moves:   []string{"a searching->matched", "b searching->matched"},
		events:  []string{"matched a m1/0", "matched b m1/1"},
		matches: []string{"m1"},
	}, {
		name: "a match with a ticket no longer searching is dropped whole",
		w:    world{tickets: []queue.TicketState{live("a"), inProposal("b", "p1")}},
		cause: queue.TickMatches{Queue: "q", Write: queue.TickWrite{Matches: []queue.Match{match1v1("m1", "a", "b")},
			Expired: []queue.Expiry{{TicketID: "a", Reason: "ttl"}}}},
		moves:   []string{"a searching->expired (ttl)"},
		events:  []string{"expired a (ttl)"},
		dropped: []string{"m1 not_searching b"},
	}, {
		name: "a ticket in two matches of a write goes to the first",
		w:    world{tickets: []queue.TicketState{live("a"), live("b"), live("c")}},
		cause: queue.TickMatches{Queue: "q", Write: queue.TickWrite{Matches: []queue.Match{match1v1("m1", "a", "b"), match1v1("m2", "b", "c")},
			Expired: []queue.Expiry{{TicketID: "b", Reason: "ttl"}, {TicketID: "c", Reason: "ttl"}}}},
		moves:   []string{"a searching->matched", "b searching->matched", "c searching->expired (ttl)"},
		events:  []string{"matched a m1/0", "matched b m1/1", "expired c (ttl)"},
		dropped: []string{"m2 taken b"},
		matches: []string{"m1"},
	}, {
		name: "a ticket unknown, of another queue, or no ticket at all: dropped",
		w:    world{tickets: []queue.TicketState{live("a"), {ID: "x", Queue: "other", Status: queue.Searching}}},
		cause: queue.TickMatches{Queue: "q", Write: queue.TickWrite{Matches: []queue.Match{match1v1("m1", "a", "gone"), match1v1("m2", "a", "x"),
			{ID: "m3"}}, Expired: []queue.Expiry{{TicketID: "x", Reason: "ttl"}}}},
		dropped: []string{"m1 unknown gone", "m2 unknown x", "m3 no_tickets"},
	}, {
		name:    "a backfill's fill: the joiners join the running match",
		w:       world{tickets: []queue.TicketState{live("bf"), live("j")}},
		cause:   queue.TickMatches{Queue: "q", Write: queue.TickWrite{Matches: []queue.Match{fill}}},
		moves:   []string{"bf searching->matched", "j searching->matched"},
		events:  []string{"matched bf running/0", "matched j running/1"},
		matches: []string{"f1"},
	}} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t) })
	}
}

func TestLifecycleTickAssignsEveryTicketItsMatch(t *testing.T) {
	t.Parallel()
	w := world{tickets: []queue.TicketState{live("a"), live("b")}}
	m := match1v1("m1", "a", "b")
	m.Teams[0].Name, m.Teams[1].Name = "red", "blue"
	c, asked, err := w.decide(sec(10), queue.TickMatches{Queue: "q", Write: queue.TickWrite{Matches: []queue.Match{m}}}, nil)
	if err != nil || len(asked) != 1 || !slices.Equal(asked[0].Tickets, []string{"a", "b"}) {
		t.Fatalf("asked %+v, %v: want the tickets a and b, once", asked, err)
	}
	for i, tr := range c.Transitions {
		a := tr.Assignment
		if a == nil || a.MatchID != "m1" || a.Team != i || a.Region != "eu" || !slices.Equal(a.TeamNames, []string{"red", "blue"}) ||
			len(a.Teams) != 2 || a.Teams[1][0] != "pb" || tr.Proposal != nil {
			t.Fatalf("%s's assignment %+v", tr.Ticket, a)
		}
	}
	var tk queue.Ticket
	c.Transitions[1].Apply(&tk, c.At)
	if tk.Status != queue.Matched || tk.Assignment.Team != 1 || !tk.UpdatedAt.Equal(sec(10)) || c.Matches[0].Queue != "q" {
		t.Fatalf("the ticket as the transition leaves it: %+v; the match %+v", tk, c.Matches[0])
	}
	if done := c.Committed(); !slices.Equal(done.Matches, []string{"m1"}) || len(done.Dropped)+len(done.Expired) != 0 {
		t.Fatalf("committed: %+v", done)
	}
}

func TestLifecyclePropose(t *testing.T) {
	t.Parallel()
	fill := match1v1("f1", "a", "b")
	fill.BackfillOf = "running"
	w := world{tickets: []queue.TicketState{live("a"), live("b"), inProposal("c", "p0"), live("d")}}
	for _, tc := range []lifecycleCase{{
		name: "a ready check proposes the match: its tickets are held, each told",
		w:    w,
		cause: queue.TickProposals{Queue: "q", Write: queue.ProposeWrite{AcceptBy: sec(30),
			Proposals: []queue.Match{match1v1("m1", "a", "b"), match1v1("m2", "c", "d")}}},
		moves:     []string{"a searching->proposed", "b searching->proposed"},
		events:    []string{"proposed a m1/0", "proposed b m1/1"},
		dropped:   []string{"m2 not_searching c"},
		proposals: []string{"new m1 open"},
	}, {
		name: "an allocator without a ready check places it at once, without events",
		w:    w,
		cause: queue.TickProposals{Queue: "q", Write: queue.ProposeWrite{AcceptBy: sec(40), PlaceFor: 30 * time.Second, Placing: true,
			Proposals: []queue.Match{match1v1("m1", "a", "b")}}},
		moves:     []string{"a searching->placing", "b searching->placing"},
		proposals: []string{"new m1 placing"},
	}, {
		name:    "a backfill's fill is never proposed",
		w:       w,
		cause:   queue.TickProposals{Queue: "q", Write: queue.ProposeWrite{AcceptBy: sec(30), Proposals: []queue.Match{fill}}},
		dropped: []string{"f1 fill"},
	}} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t) })
	}
	c, _, _ := w.decide(sec(10), queue.TickProposals{Queue: "q", Write: queue.ProposeWrite{AcceptBy: sec(30),
		Proposals: []queue.Match{match1v1("m1", "a", "b")}}}, nil)
	tp := c.Transitions[1].Proposal
	if tp == nil || tp.MatchID != "m1" || tp.Team != 1 || !tp.AcceptBy.Equal(sec(30)) || tp.Region != "eu" || len(tp.Teams) != 2 {
		t.Fatalf("what b is told of its proposal: %+v", tp)
	}
	if p := c.NewProposals[0]; !p.Match.CreatedAt.Equal(sec(10)) || p.Answers == nil || p.Match.Queue != "q" {
		t.Fatalf("the proposal stored: %+v", p)
	}
}

func TestLifecycleReadyCheck(t *testing.T) {
	t.Parallel()
	m := match1v1("m1", "a", "b")
	open := func(answers map[string]bool) world {
		return world{tickets: []queue.TicketState{inProposal("a", "m1"), inProposal("b", "m1")},
			proposals: []queue.Proposal{proposalOf(m, queue.ProposalOpen, sec(30), answers)}}
	}
	placed := open(map[string]bool{"pa": true})
	placed.proposals[0].PlaceFor = 20 * time.Second
	answer := func(player string, accept bool) queue.Cause {
		return queue.ReadyCheckAnswer{Proposal: "m1", Player: player, Accept: accept}
	}
	for _, tc := range []lifecycleCase{{
		name: "an unknown proposal", w: open(nil), cause: queue.ReadyCheckAnswer{Proposal: "m9", Player: "pa", Accept: true},
		code: apperr.NotFound,
	}, {
		name: "a player not in it", w: open(nil), cause: answer("nobody", true), code: apperr.NotFound,
	}, {
		name: "a resolved proposal takes no more answers",
		w: world{tickets: []queue.TicketState{live("a")},
			proposals: []queue.Proposal{proposalOf(m, queue.ProposalDeclined, sec(30), nil)}},
		cause: answer("pa", true), code: apperr.Conflict,
	}, {
		name: "an answer that leaves it open is recorded", w: open(nil), cause: answer("pa", true),
		proposals: []string{"m1 open"},
	}, {
		name: "the last acceptance makes the match", w: open(map[string]bool{"pa": true}), cause: answer("pb", true),
		moves:     []string{"a proposed->matched", "b proposed->matched"},
		events:    []string{"matched a m1/0", "matched b m1/1"},
		matches:   []string{"m1"},
		proposals: []string{"m1 accepted"},
	}, {
		name: "with an allocator, the last acceptance places it", w: placed, cause: answer("pb", true),
		moves:     []string{"a proposed->placing", "b proposed->placing"},
		proposals: []string{"m1 placing"},
	}, {
		name: "a decline cancels the decliner's ticket, then requeues the others",
		w:    open(map[string]bool{"pa": true}), cause: answer("pb", false),
		moves:     []string{"b proposed->cancelled (declined)", "a proposed->searching"},
		events:    []string{"cancelled b (declined)", "requeued a m1/0 (declined)"},
		proposals: []string{"m1 declined"},
	}} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t) })
	}

	w := open(map[string]bool{"pa": true})
	c, asked, err := w.decide(sec(12), answer("pb", true), nil)
	if err != nil || len(asked) != 2 || !slices.Equal(asked[0].Proposals, []string{"m1"}) || !slices.Equal(asked[1].Tickets, []string{"a", "b"}) {
		t.Fatalf("asked %+v, %v: want the proposal, then its tickets", asked, err)
	}
	if mt := c.Matches[0]; !mt.CreatedAt.Equal(sec(12)) || len(w.proposals[0].Answers) != 1 {
		t.Fatalf("the match made at the answer %v; the stored answers left alone: %v", mt.CreatedAt, w.proposals[0].Answers)
	}
	c, _, _ = placed.decide(sec(12), answer("pb", true), nil)
	if p := c.Proposals[0]; !p.AcceptBy.Equal(sec(32)) || !p.ResolvedAt.IsZero() || !c.Transitions[0].Proposal.AcceptBy.Equal(sec(32)) {
		t.Fatalf("placing: the allocator's deadline %v, resolved %v, the ticket's %v", p.AcceptBy, p.ResolvedAt, c.Transitions[0].Proposal)
	}
}

func TestLifecycleDeadlines(t *testing.T) {
	t.Parallel()
	due := func(w world, l *queue.Locked) { l.Read(queue.Need{}, nil, w.proposals, nil) }
	party := match1v1("m1", "a", "b")
	party.Teams[0].Players = append(party.Teams[0].Players, queue.MatchPlayer{ID: "pa2", TicketID: "a"})
	w := world{
		tickets: []queue.TicketState{inProposal("a", "m1"), inProposal("b", "m1"), beingPlaced("c", "m2"), beingPlaced("d", "m2"),
			inProposal("e", "m3"), inProposal("f", "m3")},
		proposals: []queue.Proposal{
			proposalOf(party, queue.ProposalOpen, sec(10), map[string]bool{"pa": true, "pb": true}),
			proposalOf(match1v1("m2", "c", "d"), queue.ProposalPlacing, sec(9), nil),
			proposalOf(match1v1("m3", "e", "f"), queue.ProposalOpen, sec(11), nil),
		},
	}
	lifecycleCase{
		w: w, cause: queue.DeadlinesPassed{Queue: "q"}, locked: due,
		moves: []string{"a proposed->cancelled (acceptance_timeout)", "b proposed->searching", "c placing->searching",
			"d placing->searching"},
		events: []string{"cancelled a (acceptance_timeout)", "requeued b m1/0 (acceptance_timeout)",
			"requeued c m2/0 (placement_timeout)", "requeued d m2/0 (placement_timeout)"},
		proposals: []string{"m1 timed_out", "m2 failed"},
	}.run(t)
}

func TestLifecyclePlacement(t *testing.T) {
	t.Parallel()
	conn := json.RawMessage(`{"address":"10.0.0.7"}`)
	w := world{tickets: []queue.TicketState{beingPlaced("a", "m1"), beingPlaced("b", "m1"), inProposal("c", "m2"), inProposal("d", "m2")},
		proposals: []queue.Proposal{proposalOf(match1v1("m1", "a", "b"), queue.ProposalPlacing, sec(30), nil),
			proposalOf(match1v1("m2", "c", "d"), queue.ProposalOpen, sec(30), nil)}}
	for _, tc := range []lifecycleCase{{
		name: "placed: the match is made with the connection", w: w,
		cause:     queue.PlacementAnswer{Proposal: "m1", Connection: conn},
		moves:     []string{"a placing->matched", "b placing->matched"},
		events:    []string{"matched a m1/0", "matched b m1/1"},
		matches:   []string{"m1"},
		proposals: []string{"m1 accepted"},
	}, {
		name: "not placed: every ticket searches again", w: w,
		cause:     queue.PlacementAnswer{Proposal: "m1", Failure: "placement_failed: no server"},
		moves:     []string{"a placing->searching", "b placing->searching"},
		events:    []string{"requeued a m1/0 (placement_failed: no server)", "requeued b m1/0 (placement_failed: no server)"},
		proposals: []string{"m1 failed"},
	}, {
		name: "a proposal not being placed", w: w, cause: queue.PlacementAnswer{Proposal: "m2", Connection: conn}, code: apperr.Conflict,
	}, {
		name: "no such proposal", w: w, cause: queue.PlacementAnswer{Proposal: "m9", Connection: conn}, code: apperr.NotFound,
	}} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t) })
	}
	c, _, _ := w.decide(sec(10), queue.PlacementAnswer{Proposal: "m1", Connection: conn}, nil)
	if string(c.Matches[0].Connection) != string(conn) || string(c.Transitions[1].Assignment.Connection) != string(conn) {
		t.Fatalf("the connection of the match %s and of b's assignment %+v", c.Matches[0].Connection, c.Transitions[1].Assignment)
	}
}

func TestLifecyclePlaceAMadeMatch(t *testing.T) {
	t.Parallel()
	conn := json.RawMessage(`{"address":"10.0.0.7"}`)
	fill := match1v1("f1", "a", "b")
	fill.BackfillOf = "running"
	w := world{tickets: []queue.TicketState{
		{ID: "a", Queue: "q", Status: queue.Matched, Match: "m1"}, {ID: "b", Queue: "q", Status: queue.Matched, Match: "m1", Team: 1},
	}, matches: []queue.Match{match1v1("m1", "a", "b", "gone"), fill}}
	for _, tc := range []lifecycleCase{{
		name: "its tickets still matched in it are told, each with an event", w: w,
		cause:  queue.MatchPlacement{Match: "m1", Connection: conn},
		events: []string{"placed a m1/0", "placed b m1/1"},
	}, {
		name: "a fill's players join a running match", w: w, cause: queue.MatchPlacement{Match: "f1", Connection: conn},
		code: apperr.Conflict,
	}, {
		name: "no such match", w: w, cause: queue.MatchPlacement{Match: "m9", Connection: conn}, code: apperr.NotFound,
	}} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t) })
	}
	c, _, _ := w.decide(sec(10), queue.MatchPlacement{Match: "m1", Connection: conn}, nil)
	if pl := c.Placement; pl == nil || pl.Match != "m1" || !slices.Equal(pl.Tickets, []string{"a", "b"}) || len(c.Transitions) != 0 {
		t.Fatalf("the placement %+v, transitions %v", pl, moves(c))
	}
}

func TestLifecycleCancel(t *testing.T) {
	t.Parallel()
	w := world{tickets: []queue.TicketState{live("s"), {ID: "x", Queue: "q", Status: queue.Cancelled},
		{ID: "m", Queue: "q", Status: queue.Matched}, beingPlaced("pl", "m9"), inProposal("a", "m1"), inProposal("b", "m1"),
		inProposal("z", "m2")},
		proposals: []queue.Proposal{proposalOf(match1v1("m1", "a", "b"), queue.ProposalOpen, sec(30), nil),
			proposalOf(match1v1("m2", "z"), queue.ProposalDeclined, sec(30), nil)}}
	cancel := func(id string) queue.Cause { return queue.CancelRequest{Ticket: id, Reason: "cancelled"} }
	for _, tc := range []lifecycleCase{{
		name: "a searching ticket", w: w, cause: cancel("s"),
		moves: []string{"s searching->cancelled (cancelled)"}, events: []string{"cancelled s (cancelled)"},
	}, {
		name: "a cancelled one stays as it is", w: w, cause: cancel("x"),
	}, {
		name: "a matched one", w: w, cause: cancel("m"), code: apperr.Conflict,
	}, {
		name: "a placing one", w: w, cause: cancel("pl"), code: apperr.Conflict,
	}, {
		name: "an unknown one", w: w, cause: cancel("nope"), code: apperr.NotFound,
	}, {
		name: "a proposed one dissolves its proposal", w: w, cause: cancel("b"),
		moves:     []string{"b proposed->cancelled (cancelled)", "a proposed->searching"},
		events:    []string{"cancelled b (cancelled)", "requeued a m1/0 (cancelled)"},
		proposals: []string{"m1 declined"},
	}} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t) })
	}
	c, _, _ := w.decide(sec(10), queue.CancelRequest{Ticket: "a", Reason: "creation_failed"}, nil)
	if got := moves(c); !slices.Equal(got, []string{"a proposed->cancelled (creation_failed)", "b proposed->searching"}) {
		t.Fatalf("a cancel's own reason: %q", got)
	}
	if _, _, err := w.decide(sec(10), cancel("z"), nil); err == nil || apperr.CodeOf(err) != apperr.Internal {
		t.Fatalf("a ticket proposed in a proposal that is not open: %v, want an internal error", err)
	}
}

func TestLifecycleQueueDeleted(t *testing.T) {
	t.Parallel()
	queueTickets := func(w world, l *queue.Locked) { l.Read(queue.Need{}, w.tickets, nil, nil) }
	w := world{tickets: []queue.TicketState{live("s"), beingPlaced("c", "m2"), inProposal("a", "m1"), inProposal("b", "m1"),
		{ID: "d", Queue: "q", Status: queue.Matched}, {ID: "o", Queue: "other", Status: queue.Searching}},
		proposals: []queue.Proposal{proposalOf(match1v1("m1", "a", "b"), queue.ProposalOpen, sec(30), nil)}}
	c := lifecycleCase{w: w, cause: queue.QueueDeleted{Queue: "q"}, locked: queueTickets,
		moves: []string{"a proposed->cancelled (queue deleted)", "b proposed->cancelled (queue deleted)",
			"c placing->cancelled (queue deleted)", "s searching->cancelled (queue deleted)"},
		events: []string{"cancelled a (queue deleted)", "cancelled b (queue deleted)", "cancelled c (queue deleted)",
			"cancelled s (queue deleted)"},
	}.run(t)
	// Its proposal, answered after, touches none of the tickets it cancelled.
	for _, tr := range c.Transitions {
		st := &w.tickets[slices.IndexFunc(w.tickets, func(s queue.TicketState) bool { return s.ID == tr.Ticket })]
		st.Status, st.Proposal = tr.To, ""
	}
	w.proposals[0].Answers = map[string]bool{"pa": true}
	lifecycleCase{w: w, cause: queue.ReadyCheckAnswer{Proposal: "m1", Player: "pb", Accept: true},
		matches: []string{"m1"}, proposals: []string{"m1 accepted"}}.run(t)
}

// Every transition the lifecycle decides starts from the status the store read, and only the
// final ones end a ticket.
func TestLifecycleTransitionsStartWhereTheTicketIs(t *testing.T) {
	t.Parallel()
	w := world{tickets: []queue.TicketState{live("a"), inProposal("b", "m1"), inProposal("c", "m1")},
		proposals: []queue.Proposal{proposalOf(match1v1("m1", "b", "c"), queue.ProposalOpen, sec(5), map[string]bool{"pb": true})}}
	before := maps.Collect(func(yield func(string, queue.Status) bool) {
		for _, t := range w.tickets {
			yield(t.ID, t.Status)
		}
	})
	for _, cause := range []queue.Cause{
		queue.CancelRequest{Ticket: "a", Reason: "cancelled"}, queue.CancelRequest{Ticket: "c", Reason: "cancelled"},
		queue.ReadyCheckAnswer{Proposal: "m1", Player: "pc", Accept: false}, queue.DeadlinesPassed{Queue: "q"},
	} {
		c, _, err := w.decide(sec(10), cause, func(w world, l *queue.Locked) { l.Read(queue.Need{}, nil, w.proposals, nil) })
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range c.Transitions {
			final := tr.To == queue.Matched || tr.To == queue.Expired || tr.To == queue.Cancelled
			if tr.From != before[tr.Ticket] || tr.Ends() != final {
				t.Fatalf("%T: %s from %s (stored %s), ends %v", cause, tr.Ticket, tr.From, before[tr.Ticket], tr.Ends())
			}
		}
	}
}
