package queuetest

import (
	"reflect"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// testTeamShapesRoundTrip: a queue's team shape, a ticket's players' roles, and a shaped
// match's team names, roles and open slots read back as written, in the match and in each
// ticket's assignment.
func testTeamShapesRoundTrip(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := Queue("hunt")
	q.TeamDefs = []matchrules.TeamDef{
		{Name: "monster", Size: 1},
		{Name: "hunters", Size: 3, MinSize: []matchrules.Step{{AfterS: 0, Value: 3}, {AfterS: 60, Value: 2}},
			Composition: map[string]matchrules.RoleRange{"medic": {Min: 0, Max: 1}}},
	}
	q.Teams, q.TeamSize, q.MaxPartySize = 2, 3, 3
	q.Roles = []string{"medic", "trapper"}
	putQueue(t, st, q)
	got := must[queue.Queue](t)(st.GetQueue(c, "hunt"))
	if !reflect.DeepEqual(got.TeamDefs, q.TeamDefs) || !slices.Equal(got.Roles, q.Roles) || got.MinTeamSize != nil {
		t.Fatalf("shape read back: %+v %+v", got.TeamDefs, got.Roles)
	}
	sym := Queue("ffa")
	sym.Teams, sym.TeamSize, sym.MaxPartySize = 8, 1, 1
	sym.MinTeamSize = []queue.Step{{AfterS: 0, Value: 1}}
	sym.Roles = []string{"tank"}
	sym.Composition = map[string]matchrules.RoleRange{"tank": {Min: 0, Max: 1}}
	putQueue(t, st, sym)
	if got := must[queue.Queue](t)(st.GetQueue(c, "ffa")); got.Teams != 8 || !slices.Equal(got.MinTeamSize, sym.MinTeamSize) ||
		!reflect.DeepEqual(got.Composition, sym.Composition) {
		t.Fatalf("symmetric shape read back: %+v", got)
	}

	m1 := Ticket("hunt", "m1", 1, "monster")
	h := Ticket("hunt", "h", 2, "h1", "h2")
	h.Players[0].Roles, h.Players[1].Roles = []string{"medic", "trapper"}, []string{"trapper"}
	create(t, st, m1)
	create(t, st, h)
	if read := must[queue.Ticket](t)(st.GetTicket(c, "h")); !slices.Equal(read.Players[0].Roles, []string{"medic", "trapper"}) ||
		read.Players[1].Roles[0] != "trapper" {
		t.Fatalf("roles read back: %+v", read.Players)
	}
	match := queue.Match{ID: "mt", CreatedAt: at(10), Teams: []queue.MatchTeam{
		{Name: "monster", Players: []queue.MatchPlayer{{ID: "monster", TicketID: "m1", Rating: 1000}}, RatingTotal: 1000},
		{Name: "hunters", OpenSlots: 1, Roles: []string{"medic", "trapper"}, RatingTotal: 2010,
			Players: []queue.MatchPlayer{{ID: "h1", TicketID: "h", Rating: 1000}, {ID: "h2", TicketID: "h", Rating: 1010}}},
	}}
	done := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "hunt", queue.TickWrite{At: at(10), Matches: []queue.Match{match}}))
	if !slices.Equal(done.Matches, []string{"mt"}) {
		t.Fatalf("committed %+v", done)
	}
	m := must[queue.Match](t)(st.GetMatch(c, "mt"))
	if m.Teams[0].Name != "monster" || m.Teams[1].OpenSlots != 1 || !slices.Equal(m.Teams[1].Roles, []string{"medic", "trapper"}) {
		t.Fatalf("match teams read back: %+v", m.Teams)
	}
	a := must[queue.Ticket](t)(st.GetTicket(c, "h")).Assignment
	if a == nil || a.Team != 1 || !slices.Equal(a.TeamNames, []string{"monster", "hunters"}) ||
		!slices.Equal(a.OpenSlots, []int{0, 1}) || a.Roles["h1"] != "medic" || a.Roles["h2"] != "trapper" {
		t.Fatalf("assignment: %+v", a)
	}
}
