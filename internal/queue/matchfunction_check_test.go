package queue_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The check of a match function's proposals, case by case: what a proposal names, what the
// pool and the queue hold, and what the check makes of it.

// poolTicket is a searching ticket of players with these ratings (ids id-1, id-2, ...), made
// wait seconds before epoch.
func poolTicket(id string, wait int, ratings ...float64) queue.Ticket {
	t := queue.Ticket{ID: id, Queue: "q", Status: queue.Searching, CreatedAt: sec(-wait)}
	for i, r := range ratings {
		t.Players = append(t.Players, queue.Player{ID: id + "-" + string(rune('1'+i)), Rating: r})
	}
	return t
}

// withRoles gives each of t's players the roles of one comma-separated list of lists.
func withRoles(t queue.Ticket, lists ...string) queue.Ticket {
	for i, l := range lists {
		if l != "" {
			t.Players[i].Roles = strings.Split(l, ",")
		}
	}
	return t
}

func teams(ts ...[]string) [][]string { return ts }
func team(ids ...string) []string     { return ids }

type checkCase struct {
	name      string
	proposals []queue.ProposedMatch
	made      int                  // how many matches are made
	rejected  []queue.RejectReason // the reasons of the rejected, in order
}

func runChecks(t *testing.T, c *queue.FunctionCheck, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			made, rejected := c.Check(tc.proposals)
			var why []queue.RejectReason
			for _, r := range rejected {
				why = append(why, r.Reason)
				if r.Detail == "" || len(r.Tickets) == 0 && r.Reason != queue.RejectEmpty {
					t.Errorf("rejection %+v: want a detail and the proposal's tickets", r)
				}
			}
			if len(made) != tc.made || !slices.Equal(why, tc.rejected) {
				t.Fatalf("made %d, rejected %v; want %d made, rejected %v (%+v)", len(made), why, tc.made, tc.rejected, rejected)
			}
		})
	}
}

func TestFunctionCheckTwoTeams(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 2, 2
	pool := []queue.Ticket{poolTicket("a", 40, 1000), poolTicket("b", 30, 1010), poolTicket("c", 20, 990), poolTicket("d", 10, 1200),
		poolTicket("e", 5, 1000, 1100), poolTicket("f", 5, 1050, 1050), poolTicket("gone", 5, 1000), poolTicket("h", 1, 1000)}
	check := &queue.FunctionCheck{Queue: &q, Pool: pool, Now: epoch, Searching: func(id string) bool { return id != "gone" },
		Constraints: []queue.MatchConstraint{func(_ *queue.Queue, ts []*queue.Ticket, _ *queue.Match) (queue.RejectReason, string) {
			for _, x := range ts {
				if x.ID == "d" {
					return queue.RejectAvoid, "d avoids everyone"
				}
			}
			return "", ""
		}}}
	cases := []checkCase{
		{name: "solos", proposals: []queue.ProposedMatch{{Teams: teams(team("a", "b"), team("c", "h"))}}, made: 1},
		{name: "a team short", proposals: []queue.ProposedMatch{{Teams: teams(team("a", "b"), team("c"))}}, rejected: []queue.RejectReason{queue.RejectTeamSize}},
		{name: "not searching", proposals: []queue.ProposedMatch{{Teams: teams(team("a", "b"), team("c", "gone"))}}, rejected: []queue.RejectReason{queue.RejectNotSearching}},
		{name: "parties", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("f"))}}, made: 1},
		{name: "a party against solos", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("a", "c"))}}, made: 1},
		{name: "unknown ticket", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("a", "zz"))}}, rejected: []queue.RejectReason{queue.RejectUnknown}},
		{name: "twice on a team", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("a", "a"))}}, rejected: []queue.RejectReason{queue.RejectDuplicate}},
		{name: "a party on two teams", proposals: []queue.ProposedMatch{{Teams: teams(team("e", "a"), team("e"))}}, rejected: []queue.RejectReason{queue.RejectPartySplit}},
		{name: "three teams", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("f"), team("a", "b"))}}, rejected: []queue.RejectReason{queue.RejectTeams}},
		{name: "a team too large", proposals: []queue.ProposedMatch{{Teams: teams(team("e", "a"), team("f"))}}, rejected: []queue.RejectReason{queue.RejectTeamSize}},
		{name: "empty", proposals: []queue.ProposedMatch{{Teams: teams(team(), team())}}, rejected: []queue.RejectReason{queue.RejectEmpty}},
		{name: "no teams", proposals: []queue.ProposedMatch{{}}, rejected: []queue.RejectReason{queue.RejectEmpty}},
		{name: "a ticket in two matches", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("a", "b"))}, {Teams: teams(team("f"), team("a", "c"))}},
			made: 1, rejected: []queue.RejectReason{queue.RejectDuplicate}},
		{name: "a rejected match takes nothing", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("a", "zz"))}, {Teams: teams(team("e"), team("a", "b"))}},
			made: 1, rejected: []queue.RejectReason{queue.RejectUnknown}},
		{name: "roles in a queue without", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("f")), Roles: map[string]string{"e-1": "tank"}}},
			rejected: []queue.RejectReason{queue.RejectRoles}},
		{name: "an undeclared attribute", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("f")), Attributes: map[string]matchrules.Value{"map": matchrules.StringValue("dust")}}},
			rejected: []queue.RejectReason{queue.RejectAttributes}},
		{name: "a region not the queue's", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("f")), Region: "bad region!"}},
			rejected: []queue.RejectReason{queue.RejectRegion}},
		{name: "a constraint", proposals: []queue.ProposedMatch{{Teams: teams(team("e"), team("a", "d"))}}, rejected: []queue.RejectReason{queue.RejectAvoid}},
	}
	runChecks(t, check, cases)
}

// A made match is as the queue keeps the built-in pass's: its players with tickets and
// ratings, each team sorted by rating and paired in that order, the pairs' intervals the
// wider of their tickets', the teams' differences.
func TestFunctionCheckBuildsTheMatch(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 2, 2
	q.Expansions.Interval = []queue.Step{{AfterS: 0, Value: 25}, {AfterS: 30, Value: 100}}
	pool := []queue.Ticket{poolTicket("a", 40, 1100), poolTicket("b", 5, 900), poolTicket("e", 5, 1000, 1060)}
	made, rejected := (&queue.FunctionCheck{Queue: &q, Pool: pool, Now: epoch}).Check([]queue.ProposedMatch{{Teams: teams(team("a", "b"), team("e"))}})
	if len(made) != 1 || len(rejected) != 0 {
		t.Fatalf("made %v, rejected %v", made, rejected)
	}
	m := made[0]
	if !strings.HasPrefix(m.ID, "mt-") || !m.CreatedAt.Equal(epoch) {
		t.Errorf("match id %q at %v: want a new match id, made now", m.ID, m.CreatedAt)
	}
	var got []string
	for _, team := range m.Teams {
		var ids []string
		for _, p := range team.Players {
			ids = append(ids, p.ID+"@"+p.TicketID)
		}
		got = append(got, strings.Join(ids, " "))
	}
	if want := []string{"b-1@b a-1@a", "e-1@e e-2@e"}; !slices.Equal(got, want) {
		t.Errorf("teams %q, want %q (each by rating)", got, want)
	}
	if m.Teams[0].RatingTotal != 2000 || m.Teams[1].RatingTotal != 2060 || m.SkillDifference != 60 || m.AverageDifference != 30 {
		t.Errorf("totals %v %v, differences %v %v; want 2000 2060, 60 30", m.Teams[0].RatingTotal, m.Teams[1].RatingTotal, m.SkillDifference, m.AverageDifference)
	}
	want := []queue.Pair{{Players: [2]string{"b-1", "e-1"}, Difference: 100, Interval: 25}, {Players: [2]string{"a-1", "e-2"}, Difference: 40, Interval: 100}}
	if !slices.Equal(m.Pairs, want) {
		t.Errorf("pairs %+v, want %+v", m.Pairs, want)
	}
	if m.Tickets()[0] != "b" || len(m.Tickets()) != 3 {
		t.Errorf("tickets %v", m.Tickets())
	}
}

// A shaped queue: named teams, compositions, minimum sizes by the oldest ticket's wait, roles
// given by the function or fitted by the service.
func TestFunctionCheckShapes(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize, q.Roles = 3, 3, []string{"tank", "dps"}
	q.Composition = map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}
	q.MinTeamSize = []queue.Step{{AfterS: 0, Value: 3}, {AfterS: 60, Value: 2}}
	pool := []queue.Ticket{
		withRoles(poolTicket("t1", 10, 1000), "tank"), withRoles(poolTicket("t2", 10, 1000), "tank"),
		withRoles(poolTicket("d1", 10, 1000), "dps"), withRoles(poolTicket("d2", 10, 1000), "dps"),
		withRoles(poolTicket("d3", 10, 1000), "dps"), withRoles(poolTicket("d4", 10, 1000), "dps"),
		poolTicket("any", 10, 1000), withRoles(poolTicket("old", 90, 1000), "tank,dps"),
		withRoles(poolTicket("oldd", 90, 1000), "dps"),
	}
	check := &queue.FunctionCheck{Queue: &q, Pool: pool, Now: epoch}
	cases := []checkCase{
		{name: "fitted", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "d1", "d2"), team("t2", "d3", "any"))}}, made: 1},
		{name: "two tanks", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "t2", "d2"), team("any", "d3", "d4"))}}, rejected: []queue.RejectReason{queue.RejectComposition}},
		{name: "no tank", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "d1", "d2"), team("d3", "d4", "oldd"))}}, rejected: []queue.RejectReason{queue.RejectComposition}},
		{name: "given", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "d1", "d2"), team("t2", "d3", "any")),
			Roles: map[string]string{"t1-1": "tank", "d1-1": "dps", "d2-1": "dps", "t2-1": "tank", "d3-1": "dps", "any-1": "dps"}}}, made: 1},
		{name: "given, not his", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "d1", "d2"), team("t2", "d3", "any")),
			Roles: map[string]string{"t1-1": "dps", "d1-1": "tank", "d2-1": "dps", "t2-1": "tank", "d3-1": "dps", "any-1": "dps"}}}, rejected: []queue.RejectReason{queue.RejectRoles}},
		{name: "given, one missing", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "d1", "d2"), team("t2", "d3", "any")),
			Roles: map[string]string{"t1-1": "tank", "d1-1": "dps", "d2-1": "dps", "t2-1": "tank", "d3-1": "dps"}}}, rejected: []queue.RejectReason{queue.RejectRoles}},
		{name: "given, one too many", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "d1", "d2"), team("t2", "d3", "any")),
			Roles: map[string]string{"t1-1": "tank", "d1-1": "dps", "d2-1": "dps", "t2-1": "tank", "d3-1": "dps", "any-1": "dps", "d4-1": "dps"}}}, rejected: []queue.RejectReason{queue.RejectRoles}},
		{name: "given, not the queue's", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "d1", "d2"), team("t2", "d3", "any")),
			Roles: map[string]string{"t1-1": "tank", "d1-1": "dps", "d2-1": "dps", "t2-1": "tank", "d3-1": "dps", "any-1": "healer"}}}, rejected: []queue.RejectReason{queue.RejectRoles}},
		{name: "given, over the composition", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "d1", "d2"), team("t2", "d3", "any")),
			Roles: map[string]string{"t1-1": "tank", "d1-1": "dps", "d2-1": "dps", "t2-1": "tank", "d3-1": "dps", "any-1": "tank"}}}, rejected: []queue.RejectReason{queue.RejectComposition}},
		{name: "short too early", proposals: []queue.ProposedMatch{{Teams: teams(team("t1", "d1"), team("t2", "d3", "any"))}}, rejected: []queue.RejectReason{queue.RejectTeamSize}},
		{name: "short after the wait", proposals: []queue.ProposedMatch{{Teams: teams(team("old", "d1"), team("t2", "d3", "any"))}}, made: 1},
	}
	runChecks(t, check, cases)

	made, _ := check.Check([]queue.ProposedMatch{{Teams: teams(team("old", "d1"), team("t2", "d3", "any"))}})
	m := made[0]
	if m.Teams[0].OpenSlots != 1 || m.Teams[1].OpenSlots != 0 || len(m.Pairs) != 0 {
		t.Errorf("open slots %d %d, pairs %v: want 1 0 and no pairs in a shaped match", m.Teams[0].OpenSlots, m.Teams[1].OpenSlots, m.Pairs)
	}
	if !slices.Equal(m.Teams[0].Roles, []string{"tank", "dps"}) || !slices.Equal(m.Teams[1].Roles, []string{"tank", "dps", "dps"}) {
		t.Errorf("roles %v %v: want the composition's fit", m.Teams[0].Roles, m.Teams[1].Roles)
	}
}

func TestFunctionCheckNamedTeams(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamDefs = []matchrules.TeamDef{{Name: "monster", Size: 1}, {Name: "hunters", Size: 3}}
	q.Teams, q.TeamSize = queue.TeamDefsShape(q.TeamDefs)
	q.MaxPartySize = 3
	pool := []queue.Ticket{poolTicket("m", 10, 1500), poolTicket("h", 10, 900, 950, 1000), poolTicket("s", 10, 1000)}
	check := &queue.FunctionCheck{Queue: &q, Pool: pool, Now: epoch}
	runChecks(t, check, []checkCase{
		{name: "monster and hunters", proposals: []queue.ProposedMatch{{Teams: teams(team("m"), team("h"))}}, made: 1},
		{name: "the wrong way round", proposals: []queue.ProposedMatch{{Teams: teams(team("h"), team("m"))}}, rejected: []queue.RejectReason{queue.RejectTeamSize}},
	})
	made, _ := check.Check([]queue.ProposedMatch{{Teams: teams(team("m"), team("h"))}})
	if m := made[0]; m.Teams[0].Name != "monster" || m.Teams[1].Name != "hunters" || m.SkillDifference != 1350 || m.AverageDifference != 550 {
		t.Errorf("teams %q %q, differences %v %v: want monster, hunters, 1350 and 550", m.Teams[0].Name, m.Teams[1].Name, m.SkillDifference, m.AverageDifference)
	}
}

// The match's attributes are what its tickets share by the queue's equal and intersect
// rules, with the function's own values over them; its region the function's, or the one
// of the queue's whose worst latency is least.
func TestFunctionCheckAttributesAndRegion(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 1, 1
	q.Regions = []string{"eu", "us"}
	q.Expansions.MaxLatencyMS = []queue.Step{{AfterS: 0, Value: 100}}
	q.Attributes = map[string]matchrules.Attribute{"maps": {Type: matchrules.TypeStringList}, "mode": {Type: matchrules.TypeString}}
	q.Rules = []matchrules.Rule{{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps"}, {Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}}
	a, b := poolTicket("a", 10, 1000), poolTicket("b", 10, 1000)
	a.Attributes = map[string]matchrules.Value{"maps": matchrules.ListValue("dust", "mirage", "nuke"), "mode": matchrules.StringValue("ranked")}
	b.Attributes = map[string]matchrules.Value{"maps": matchrules.ListValue("nuke", "dust"), "mode": matchrules.StringValue("casual")}
	a.Latencies, b.Latencies = map[string]float64{"eu": 20, "us": 90}, map[string]float64{"eu": 140, "us": 60}
	check := &queue.FunctionCheck{Queue: &q, Pool: []queue.Ticket{a, b}, Now: epoch}

	made, _ := check.Check([]queue.ProposedMatch{{Teams: teams(team("a"), team("b"))}})
	if m := made[0]; len(m.Attributes) != 1 || m.Attributes[0].Name != "maps" || !slices.Equal(m.Attributes[0].Value.List, []string{"dust", "nuke"}) || m.Region != "us" {
		t.Errorf("attributes %+v, region %q: want maps [dust nuke] (the modes differ) and us (worst 90 ms, against eu's 140)", m.Attributes, m.Region)
	}
	made, _ = check.Check([]queue.ProposedMatch{{Teams: teams(team("a"), team("b")), Region: "eu",
		Attributes: map[string]matchrules.Value{"maps": matchrules.ListValue("nuke"), "mode": matchrules.StringValue("ranked")}}})
	if m := made[0]; len(m.Attributes) != 2 || !slices.Equal(m.Attributes[0].Value.List, []string{"nuke"}) || m.Attributes[1].Value.Str != "ranked" || m.Region != "eu" {
		t.Errorf("attributes %+v, region %q: want the function's (maps [nuke], mode ranked) in eu", m.Attributes, m.Region)
	}
	runChecks(t, check, []checkCase{
		{name: "a value of the wrong type", proposals: []queue.ProposedMatch{{Teams: teams(team("a"), team("b")), Attributes: map[string]matchrules.Value{"mode": matchrules.NumberValue(3)}}},
			rejected: []queue.RejectReason{queue.RejectAttributes}},
		{name: "a region not listed", proposals: []queue.ProposedMatch{{Teams: teams(team("a"), team("b")), Region: "asia"}}, rejected: []queue.RejectReason{queue.RejectRegion}},
	})
}
