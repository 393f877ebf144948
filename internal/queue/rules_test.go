package queue_test

import (
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// The production pass keeps the queue's rules, reports the match's attributes in the match
// and each ticket's assignment, and says why the others wait.
func TestTickPassRules(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 1, 1
	queuetest.WithRules(&q)
	t0 := queuetest.T0
	with := func(tk queue.Ticket, mode string, maps ...string) queue.Ticket {
		tk.Attributes = map[string]matchrules.Value{"maps": matchrules.ListValue(maps...)}
		if mode != "" {
			tk.Attributes["mode"] = matchrules.StringValue(mode)
		}
		return tk
	}
	waiting := []queue.Ticket{
		with(searching("a", t0, nil, pl("a", 1000)), "ranked", "dust", "nuke"),
		with(searching("b", t0.Add(time.Second), nil, pl("b", 1001)), "", "nuke", "dust"), // casual by default
		with(searching("c", t0.Add(2*time.Second), nil, pl("c", 1002)), "ranked", "mirage"),
		with(searching("d", t0.Add(3*time.Second), nil, pl("d", 1003)), "ranked", "nuke", "mirage"),
		with(searching("e", t0.Add(4*time.Second), nil, pl("e", 1004)), "ranked", "inferno"),
	}
	w, err := queue.TickPass{}.Match(q, waiting, t0.Add(5*time.Second))
	if err != nil || len(w.Matches) != 1 {
		t.Fatalf("%+v %v", w, err)
	}
	m := w.Matches[0]
	if ids := m.Tickets(); !slices.Equal(ids, []string{"a", "d"}) {
		t.Fatalf("match of %v, want a and d", ids)
	}
	want := []matchpool.MatchAttribute{{Name: "mode", Value: matchrules.StringValue("ranked")}, {Name: "maps", Value: matchrules.ListValue("nuke")}}
	if !slices.EqualFunc(m.Attributes, want, func(a, b matchpool.MatchAttribute) bool {
		return a.Name == b.Name && a.Value.Str == b.Value.Str && slices.Equal(a.Value.List, b.Value.List)
	}) {
		t.Fatalf("attributes %+v, want %+v", m.Attributes, want)
	}
	if a := queue.Assignments(m); len(a["a"].Attributes) != 2 {
		t.Fatalf("assignment %+v", a["a"])
	}
	b, _ := w.Waiting.Of("b")
	c, _ := w.Waiting.Of("c")
	if b.Rule != "mode" || c.Rule != "maps" || b.Detail == "" {
		t.Fatalf("waiting: b %+v, c %+v", b, c)
	}
	if _, ok := w.Waiting.Of("a"); ok {
		t.Fatal("a was matched, and waits on a rule")
	}
}

// A backfill ticket's attributes bind its joiners: the nearest ticket of another mode is
// passed over for one of the match's mode.
func TestTickPassBackfillKeepsTheRules(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 2, 2
	queuetest.WithRules(&q)
	t0 := queuetest.T0
	bf := searching("bf", t0, nil, pl("r1", 1000), pl("b1", 1010), pl("b2", 990))
	bf.Backfill = &queue.Backfill{MatchID: "running", OpenSlots: []int{1, 0},
		Teams: []queue.BackfillTeam{{Players: []string{"r1"}}, {Players: []string{"b1", "b2"}}}}
	bf.Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue("ranked")}
	maps := map[string]matchrules.Value{"maps": matchrules.ListValue("dust")}
	casual := searching("casual", t0.Add(-time.Minute), nil, pl("c1", 1000)) // the nearest and oldest, casual by default
	casual.Attributes = maps
	ranked := searching("ranked", t0.Add(time.Second), nil, pl("k1", 1010))
	ranked.Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue("ranked"), "maps": matchrules.ListValue("nuke")}
	w, err := queue.TickPass{}.Match(q, []queue.Ticket{casual, bf, ranked}, t0.Add(2*time.Second))
	if err != nil || len(w.Matches) != 1 || w.Matches[0].BackfillOf != "running" {
		t.Fatalf("%+v %v", w, err)
	}
	if a := queue.Assignments(w.Matches[0]); a["ranked"].MatchID != "running" || a["casual"].MatchID != "" {
		t.Fatalf("assignments %+v", a)
	}
}

// A ticket made before the queue's rules read an attribute it does not give leaves as
// invalid, and the others are matched: one such ticket does not stop the queue.
func TestTickPassExpiresTicketsTheRulesNoLongerAdmit(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 1, 1
	queuetest.WithRules(&q)
	t0 := queuetest.T0
	old := searching("old", t0, nil, pl("o", 1000)) // no maps: made before the rules
	a := searching("a", t0.Add(time.Second), nil, pl("a", 1000))
	b := searching("b", t0.Add(2*time.Second), nil, pl("b", 1000))
	a.Attributes = map[string]matchrules.Value{"maps": matchrules.ListValue("dust")}
	b.Attributes = a.Attributes
	w, err := queue.TickPass{}.Match(q, []queue.Ticket{old, a, b}, t0.Add(5*time.Second))
	if err != nil || len(w.Matches) != 1 || !slices.Equal(w.Matches[0].Tickets(), []string{"a", "b"}) ||
		len(w.Expired) != 1 || w.Expired[0] != (queue.Expiry{TicketID: "old", Reason: queue.ReasonInvalid}) {
		t.Fatalf("%+v %v", w, err)
	}
}
