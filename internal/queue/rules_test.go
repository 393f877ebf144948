package queue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// withRules gives a queue a mode (equal, default "casual") and maps (intersect, at most 3).
func withRules(q *queue.Queue) {
	casual := matchrules.StringValue("casual")
	q.Attributes = map[string]matchrules.Attribute{
		"mode": {Type: matchrules.TypeString, Default: &casual},
		"maps": {Type: matchrules.TypeStringList, MaxItems: 3},
	}
	q.Rules = []matchrules.Rule{
		{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"},
		{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps"},
	}
}

func fieldsOf(err error) []string {
	var e *apperr.Error
	if !errors.As(err, &e) {
		return nil
	}
	var out []string
	for _, f := range e.Fields {
		out = append(out, f.Field)
	}
	return out
}

// A queue's attributes and rules are checked with its definition, each fault named.
func TestQueueRulesAreValidated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.Config{})
	tests := []struct {
		name   string
		change func(q *queue.Queue)
		field  string
	}{
		{"an undeclared attribute", func(q *queue.Queue) { q.Rules[1].Attribute = "map" }, "rules[1].attribute"},
		{"an unknown type", func(q *queue.Queue) { q.Rules[0].Kind = "same" }, "rules[0].type"},
		{"a duplicate name", func(q *queue.Queue) { q.Rules[1].Name = "mode" }, "rules[1].name"},
		{"a bad name", func(q *queue.Queue) { q.Rules[1].Name = "a b" }, "rules[1].name"},
		{"expansions out of order", func(q *queue.Queue) {
			q.Rules = append(q.Rules, matchrules.Rule{Name: "fair", Kind: matchrules.RuleTeamBalance,
				Expansions: []matchrules.Step{{AfterS: 0, Value: 10}, {AfterS: 30, Value: 20}, {AfterS: 10, Value: 30}}})
		}, "rules[2].expansions[2].after_s"},
		{"an attribute type", func(q *queue.Queue) { q.Attributes["level"] = matchrules.Attribute{Type: "integer"} }, "attributes.level.type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := queue.DefaultQueue("ruled")
			q.GameType = "ctf"
			withRules(&q)
			tt.change(&q)
			_, _, err := f.svc.PutQueue(context.Background(), q)
			if apperr.CodeOf(err) != apperr.Invalid || !slices.Contains(fieldsOf(err), tt.field) {
				t.Fatalf("error %v, want a fault of %s", err, tt.field)
			}
			if _, err := f.svc.GetQueue(context.Background(), "ruled"); apperr.CodeOf(err) != apperr.NotFound {
				t.Fatalf("the invalid queue was stored: %v", err)
			}
		})
	}
}

// A ticket's attributes are checked against the queue's declarations, stored and returned,
// and part of the idempotency fingerprint.
func TestTicketAttributes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.Config{})
	ctx := context.Background()
	f.queue(t, withRules)
	for _, c := range []struct {
		attrs map[string]matchrules.Value
		field string
	}{
		{map[string]matchrules.Value{"maps": matchrules.ListValue("dust"), "level": matchrules.NumberValue(3)}, "attributes.level"},
		{map[string]matchrules.Value{"maps": matchrules.StringValue("dust")}, "attributes.maps"},
		{map[string]matchrules.Value{"maps": matchrules.ListValue("a", "b", "c", "d")}, "attributes.maps"},
		{map[string]matchrules.Value{"mode": matchrules.StringValue("ranked")}, "attributes.maps"}, // required: no default
	} {
		nt := solo("duel", "alice")
		nt.Attributes = c.attrs
		_, _, err := f.svc.CreateTicket(ctx, nt)
		if apperr.CodeOf(err) != apperr.Invalid || !slices.Contains(fieldsOf(err), c.field) {
			t.Fatalf("attributes %v: error %v, want a fault of %s", c.attrs, err, c.field)
		}
	}
	nt := solo("duel", "alice")
	nt.IdempotencyKey = "k1"
	nt.Attributes = map[string]matchrules.Value{"maps": matchrules.ListValue("dust", "nuke")}
	tk, _, err := f.svc.CreateTicket(ctx, nt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.svc.GetTicket(ctx, tk.ID, 0)
	if err != nil || !slices.Equal(got.Attributes["maps"].List, []string{"dust", "nuke"}) {
		t.Fatalf("stored %+v, %v", got.Attributes, err)
	}
	// The same key and attributes: the same ticket; other attributes: a conflict.
	if again, replayed, err := f.svc.CreateTicket(ctx, nt); err != nil || !replayed || again.ID != tk.ID {
		t.Fatalf("replay: %v %v %v", again.ID, replayed, err)
	}
	nt.Attributes = map[string]matchrules.Value{"maps": matchrules.ListValue("dust")}
	if _, _, err := f.svc.CreateTicket(ctx, nt); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("other attributes under the same key: %v", err)
	}
}

// The production pass keeps the queue's rules, reports the match's attributes in the match
// and each ticket's assignment, and says why the others wait.
func TestTickPassRules(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 1, 1
	withRules(&q)
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

// The leader serves why a searching ticket waits, counts the tickets waiting on each rule
// in its stats, and counts the blocks per rule in matchmaker_queue_rule_blocks_total.
func TestTheLeaderSaysWhyATicketWaits(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	f := newFixture(t, queue.Config{})
	reg := prometheus.NewRegistry()
	svc := queue.NewService(queue.Deps{Store: store, Ratings: f.ratings, Matcher: queue.TickPass{}, Clock: f.clock,
		Metrics: queue.NewMetrics(reg)})
	ctx := context.Background()
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	withRules(&q)
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range []struct{ id, mode string }{{"alice", "ranked"}, {"bob", "casual"}} {
		nt := solo("duel", p.id)
		nt.Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue(p.mode), "maps": matchrules.ListValue("dust")}
		tk, _, err := svc.CreateTicket(ctx, nt)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	runService(t, svc)
	ticked(t, f.clock, svc, "duel") // its first pass, and the first stats, say why they wait
	if st, err := svc.Stats(ctx, "duel"); err != nil || st.WaitingOn["mode"] != 2 {
		t.Fatalf("stats waiting on %v (%v), want mode: 2 (stats from %q)", st.WaitingOn, err, st.Source)
	}
	for _, id := range ids {
		got, err := svc.GetTicket(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got.WaitingOn == nil || got.WaitingOn.Rule != "mode" || got.WaitingOn.Detail != "only 0 candidates with the same mode" {
			t.Fatalf("ticket %s waiting on %+v", id, got.WaitingOn)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0.0
	for _, mf := range families {
		if mf.GetName() != "matchmaker_queue_rule_blocks_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "rule" && l.GetValue() == "mode" {
					blocks += m.GetCounter().GetValue()
				}
			}
		}
	}
	if blocks < 2 {
		t.Fatalf("matchmaker_queue_rule_blocks_total{rule=mode} = %g, want at least a tick's 2", blocks)
	}
}

// A backfill ticket's attributes bind its joiners: the nearest ticket of another mode is
// passed over for one of the match's mode.
func TestTickPassBackfillKeepsTheRules(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 2, 2
	withRules(&q)
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

// A backfill's attributes are checked (each optional) and stored.
func TestCreateBackfillAttributes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.Config{})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize = 2, 2; withRules(q) })
	nb := queue.NewBackfill{Queue: "duel", MatchID: "running", OpenSlots: []int{1, 0},
		Teams:      []queue.NewBackfillTeam{{Players: []queue.NewPlayer{{ID: "r1"}}}, {Players: []queue.NewPlayer{{ID: "b1"}, {ID: "b2"}}}},
		Attributes: map[string]matchrules.Value{"mode": matchrules.NumberValue(1)}}
	if _, _, err := f.svc.CreateBackfill(ctx, nb); !slices.Contains(fieldsOf(err), "attributes.mode") {
		t.Fatalf("a mode of the wrong type: %v", err)
	}
	nb.Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue("ranked")} // no maps: optional for a backfill
	tk, _, err := f.svc.CreateBackfill(ctx, nb)
	if err != nil || tk.Attributes["mode"].Str != "ranked" {
		t.Fatalf("%+v %v", tk.Attributes, err)
	}
}

// A ticket made before the queue's rules read an attribute it does not give leaves as
// invalid, and the others are matched: one such ticket does not stop the queue.
func TestTickPassExpiresTicketsTheRulesNoLongerAdmit(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 1, 1
	withRules(&q)
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
