package queuetest

import (
	"reflect"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// testAvoidLists: a queue's avoid (scope, optional_after_s) and a ticket's players' avoid
// lists (read alone and in Changes) come back as they were stored; a queue and players
// without them come back without.
func testAvoidLists(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := Queue("avoiding")
	after := 90.0
	q.Avoid = matchrules.Avoid{Scope: matchrules.AvoidTeam, OptionalAfterS: &after}
	putQueue(t, st, q)
	putQueue(t, st, Queue("trusting"))
	if got := must[queue.Queue](t)(st.GetQueue(c, "avoiding")); !reflect.DeepEqual(got.Avoid, q.Avoid) {
		t.Fatalf("avoid read back %+v, want %+v", got.Avoid, q.Avoid)
	}
	if got := must[queue.Queue](t)(st.GetQueue(c, "trusting")); got.Avoid != (matchrules.Avoid{}) {
		t.Fatalf("a queue without avoid: %+v", got.Avoid)
	}
	a := Ticket("avoiding", "va", 1, "v1", "v2")
	a.Players[0].Avoid = []string{"w1", "w2"}
	create(t, st, a)
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "va")); !slices.Equal(tk.Players[0].Avoid, []string{"w1", "w2"}) || tk.Players[1].Avoid != nil {
		t.Fatalf("players read back %+v", tk.Players)
	}
	changes, _ := must2(t)(st.Changes(c, queue.Queue{Name: "avoiding"}, "", 0))
	if i := slices.IndexFunc(changes, func(x queue.Ticket) bool { return x.ID == "va" }); i < 0 || !slices.Equal(changes[i].Players[0].Avoid, []string{"w1", "w2"}) {
		t.Fatalf("changes %+v", changes)
	}
}
