package queuesvc_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
	"github.com/prometheus/client_golang/prometheus"
)

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
	f := newFixture(t, queuesvc.Config{})
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
			queuetest.WithRules(&q)
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
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, queuetest.WithRules)
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

// The leader serves why a searching ticket waits, counts the tickets waiting on each rule
// in its stats, and counts the blocks per rule in matchmaker_queue_rule_blocks_total.
func TestTheLeaderSaysWhyATicketWaits(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	f := newFixture(t, queuesvc.Config{})
	reg := prometheus.NewRegistry()
	svc := queuesvc.New(queuesvc.Deps{Store: store, Ratings: f.ratings, Matcher: queue.TickPass{}, Clock: f.clock,
		Metrics: queuesvc.NewMetrics(reg)})
	ctx := context.Background()
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	queuetest.WithRules(&q)
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

// A backfill's attributes are checked (each optional) and stored.
func TestCreateBackfillAttributes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize = 2, 2; queuetest.WithRules(q) })
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
