package queuetest

import (
	"reflect"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// testRulesAndAttributes: a queue's attribute declarations and rules, a ticket's attributes
// (read alone and in Changes), and a match's agreed attributes (in the match and in its
// tickets' assignments) come back as they were stored; a queue, a ticket and a match
// without them come back without.
func testRulesAndAttributes(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := Queue("ruled")
	casual, after := matchrules.StringValue("casual"), 60.0
	q.Attributes = map[string]matchrules.Attribute{
		"mode":  {Type: matchrules.TypeString, Default: &casual},
		"maps":  {Type: matchrules.TypeStringList, MaxItems: 3},
		"level": {Type: matchrules.TypeNumber},
	}
	q.Rules = []matchrules.Rule{
		{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"},
		{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps", MinCommon: 2},
		{Name: "level", Kind: matchrules.RuleDistance, Attribute: "level", Expansions: []matchrules.Step{{AfterS: 0, Value: 5}, {AfterS: 30, Value: 10}},
			OptionalAfterS: &after},
	}
	putQueue(t, st, q)
	putQueue(t, st, Queue("plain"))
	got := must[queue.Queue](t)(st.GetQueue(c, "ruled"))
	if !reflect.DeepEqual(got.Attributes, q.Attributes) || !reflect.DeepEqual(got.Rules, q.Rules) {
		t.Fatalf("rules read back %+v %+v, want %+v %+v", got.Attributes, got.Rules, q.Attributes, q.Rules)
	}
	if plain := must[queue.Queue](t)(st.GetQueue(c, "plain")); plain.Attributes != nil || plain.Rules != nil {
		t.Fatalf("a queue without rules: %+v %+v", plain.Attributes, plain.Rules)
	}

	attrs := map[string]matchrules.Value{"mode": matchrules.StringValue("ranked"), "maps": matchrules.ListValue("nuke", "dust"), "level": matchrules.NumberValue(31.5)}
	a := Ticket("ruled", "ra", 1, "a1", "a2")
	a.Attributes = attrs
	create(t, st, a)
	b := create(t, st, Ticket("ruled", "rb", 2, "b1", "b2"))
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "ra")); !reflect.DeepEqual(tk.Attributes, attrs) {
		t.Fatalf("attributes read back %+v, want %+v", tk.Attributes, attrs)
	}
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "rb")); tk.Attributes != nil {
		t.Fatalf("a ticket without attributes: %+v", tk.Attributes)
	}
	changes, _ := must2(t)(st.Changes(c, queue.Queue{Name: "ruled"}, "", 0))
	if i := slices.IndexFunc(changes, func(x queue.Ticket) bool { return x.ID == "ra" }); i < 0 || !reflect.DeepEqual(changes[i].Attributes, attrs) {
		t.Fatalf("changes %+v", changes)
	}

	m := Match2v2("rm", a, b)
	m.Attributes = []matchpool.MatchAttribute{{Name: "mode", Value: matchrules.StringValue("ranked")}, {Name: "maps", Value: matchrules.ListValue("dust", "nuke")}}
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "ruled", queue.TickWrite{At: at(10), Matches: []queue.Match{m}}))
	if got := must[queue.Match](t)(st.GetMatch(c, "rm")); !reflect.DeepEqual(got.Attributes, m.Attributes) {
		t.Fatalf("match attributes %+v, want %+v", got.Attributes, m.Attributes)
	}
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "rb")); tk.Assignment == nil || !reflect.DeepEqual(tk.Assignment.Attributes, m.Attributes) {
		t.Fatalf("assignment %+v", tk.Assignment)
	}
}
