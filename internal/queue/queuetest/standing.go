package queuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The players' standing (queue/penalties.go): the dodges a ready check's change keeps, the
// low-priority games a match commit takes, and the standing's own update and clearing, in
// the context of the queue (with mutators, as its key is written).

func penaltyQueue(name string) queue.Queue {
	q := Queue(name)
	q.Mutators = []string{"hardcore", "night"}
	q.Penalties = queue.Penalties{Dodge: &queue.DodgePenalty{Window: time.Hour, Steps: []queue.CooldownStep{{Count: 1, Cooldown: time.Minute}}}}
	return q
}

func standingsOf(t *testing.T, st queue.Store, q queue.Queue, players ...string) map[string]queue.Standing {
	t.Helper()
	got := must[[]queue.Standing](t)(st.Standings(ctx(t), queue.StandingContext(q), players))
	out := make(map[string]queue.Standing, len(got))
	for _, s := range got {
		if s.Context != queue.StandingContext(q) {
			t.Fatalf("standing of %s in context %q, want %q", s.Player, s.Context, queue.StandingContext(q))
		}
		out[s.Player] = s
	}
	return out
}

func testDodgesOfADecline(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := penaltyQueue("q")
	putQueue(t, st, q)
	a := create(t, st, Ticket("q", "a", 1, "a1", "a2"))
	b := create(t, st, Ticket("q", "b", 2, "b1", "b2"))
	must[queue.TickCommitted](t)(queue.Propose(c, st, "q", queue.ProposeWrite{At: at(10), AcceptBy: at(30), Proposals: []queue.Match{Match2v2("m1", a, b)}}))
	if _, _, err := queue.AnswerProposal(c, st, "m1", "b1", true, at(11)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := queue.AnswerProposal(c, st, "m1", "a2", false, at(12)); err != nil {
		t.Fatal(err)
	}
	got := standingsOf(t, st, q, "a1", "a2", "b1", "b2")
	want := []queue.Dodge{{At: at(12), Queue: "q", Match: "m1"}}
	if len(got) != 1 || !slices.EqualFunc(got["a2"].Dodges, want, sameDodge) {
		t.Fatalf("standings after a2 declined: %+v", got)
	}
	// Another context (no mutators) holds nothing of it.
	if other := must[[]queue.Standing](t)(st.Standings(c, "ctf", []string{"a2"})); len(other) != 0 {
		t.Fatalf("standing in another context: %+v", other)
	}
}

func testDodgesOfATimeout(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := penaltyQueue("q")
	putQueue(t, st, q)
	a := create(t, st, Ticket("q", "a", 1, "a1", "a2"))
	b := create(t, st, Ticket("q", "b", 2, "b1", "b2"))
	must[queue.TickCommitted](t)(queue.Propose(c, st, "q", queue.ProposeWrite{At: at(10), AcceptBy: at(30), Proposals: []queue.Match{Match2v2("m1", a, b)}}))
	for _, p := range []string{"a1", "a2", "b1"} {
		if _, _, err := queue.AnswerProposal(c, st, "m1", p, true, at(11)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := queue.ExpireProposals(c, st, "q", at(30)); err != nil {
		t.Fatal(err)
	}
	got := standingsOf(t, st, q, "a1", "a2", "b1", "b2")
	if len(got) != 1 || !slices.EqualFunc(got["b2"].Dodges, []queue.Dodge{{At: at(30), Queue: "q", Match: "m1"}}, sameDodge) {
		t.Fatalf("standings after b2 let it time out: %+v", got)
	}
	// A second dodge is appended to the first.
	tb := must[queue.Ticket](t)(st.GetTicket(c, "a"))
	d := create(t, st, Ticket("q", "d", 31, "b2", "d2"))
	must[queue.TickCommitted](t)(queue.Propose(c, st, "q", queue.ProposeWrite{At: at(40), AcceptBy: at(60), Proposals: []queue.Match{Match2v2("m2", tb, d)}}))
	if _, _, err := queue.AnswerProposal(c, st, "m2", "b2", false, at(41)); err != nil {
		t.Fatal(err)
	}
	got = standingsOf(t, st, q, "b2")
	if !slices.EqualFunc(got["b2"].Dodges, []queue.Dodge{{At: at(30), Queue: "q", Match: "m1"}, {At: at(41), Queue: "q", Match: "m2"}}, sameDodge) {
		t.Fatalf("b2's dodges: %+v", got["b2"].Dodges)
	}
}

func sameDodge(a, b queue.Dodge) bool {
	return a.At.Equal(b.At) && a.Queue == b.Queue && a.Match == b.Match
}

func testLowPriorityGames(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := penaltyQueue("q")
	putQueue(t, st, q)
	key := queue.StandingContext(q)
	counted := at(5)
	if err := st.UpdateStanding(c, key, "a1", func(s *queue.Standing) bool {
		if s.Player != "a1" || s.Context != key || !s.Empty() {
			t.Errorf("a new standing: %+v", s)
		}
		s.Leaves = []queue.Leave{{At: at(4), Match: "old1"}, {At: at(5), Match: "old2"}}
		s.LowPriorityGames, s.LeavesCounted = 2, counted
		return true
	}); err != nil {
		t.Fatal(err)
	}
	a := Ticket("q", "a", 6, "a1", "a2")
	a.Players[0].LowPriority = true
	a = create(t, st, a)
	if !a.Players[0].LowPriority || a.Players[1].LowPriority {
		t.Fatalf("the ticket's players as stored: %+v", a.Players)
	}
	if got := must[queue.Ticket](t)(st.GetTicket(c, "a")); !got.Players[0].LowPriority {
		t.Fatalf("the ticket's players as read: %+v", got.Players)
	}
	b := create(t, st, Ticket("q", "b", 7, "b1", "b2"))
	m := Match2v2("m1", a, b)
	m.Teams[0].Players[0].LowPriority = true
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "q", queue.TickWrite{At: at(10), Matches: []queue.Match{m}}))
	got := standingsOf(t, st, q, "a1")["a1"]
	if got.LowPriorityGames != 1 || !got.LeavesCounted.Equal(counted) || len(got.Leaves) != 2 || got.Leaves[1].Match != "old2" {
		t.Fatalf("a1 after one low-priority game: %+v", got)
	}
	if mt := must[queue.Match](t)(st.GetMatch(c, "m1")); !mt.Teams[0].Players[0].LowPriority || mt.Teams[0].Players[1].LowPriority {
		t.Fatalf("the match's players: %+v", mt.Teams[0].Players)
	}
	// No standing change is made when change says so; an emptied one is gone.
	if err := st.UpdateStanding(c, key, "nobody", func(*queue.Standing) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if all := must[[]queue.Standing](t)(st.Standings(c, "", []string{"nobody"})); len(all) != 0 {
		t.Fatalf("a standing left by an update that changed nothing: %+v", all)
	}
	if err := st.UpdateStanding(c, "other", "a1", func(s *queue.Standing) bool { s.LowPriorityGames = 1; return true }); err != nil {
		t.Fatal(err)
	}
	all := must[[]queue.Standing](t)(st.Standings(c, "", []string{"a1", "nobody"}))
	if len(all) != 2 || all[0].Context != key || all[1].Context != "other" {
		t.Fatalf("a1's standings: %+v", all)
	}
	// Emptied, a standing is deleted, whether change reports it changed or not.
	for i, s := range all {
		if err := st.UpdateStanding(c, s.Context, "a1", func(s *queue.Standing) bool {
			*s = queue.Standing{Context: s.Context, Player: s.Player}
			return i == 0
		}); err != nil {
			t.Fatal(err)
		}
	}
	if all := must[[]queue.Standing](t)(st.Standings(c, "", []string{"a1"})); len(all) != 0 {
		t.Fatalf("a1 after the clearing: %+v", all)
	}
}
