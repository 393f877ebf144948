package tick

import (
	"math"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

func solos(ratings ...float64) []matchpool.Ticket {
	tk := make([]matchpool.Ticket, len(ratings))
	for i, r := range ratings {
		tk[i] = matchpool.Ticket{Ratings: []float64{r}, WaitingSince: float64(i), ExpiresAt: math.Inf(1)}
	}
	return tk
}

func wide() []matchrules.Step { return []matchrules.Step{{AfterS: 0, Value: 1000}} }

func TestShapedFreeForAll(t *testing.T) {
	cfg := matchrules.Config{TeamSize: 1, Interval: wide(), Shape: testqueue.Symmetric(8, 1)}
	res, err := Run(solos(10, 20, 30, 40, 50, 60, 70, 80, 90), 100, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 {
		t.Fatalf("matches = %d, want 1 of 8 players", len(res.Matches))
	}
	m := res.Matches[0]
	if len(m.Shaped) != 8 || !m.Exact {
		t.Fatalf("teams = %d, exact %v", len(m.Shaped), m.Exact)
	}
	seen := map[int]bool{}
	for _, team := range m.Shaped {
		if len(team.Players) != 1 || team.OpenSlots != 0 {
			t.Fatalf("team %+v: want one player", team)
		}
		seen[team.Players[0].Ticket] = true
	}
	if len(seen) != 8 || !seen[0] {
		t.Fatalf("players %v: want 8 different, the oldest among them", seen)
	}
	if len(res.Waiting) != 0 {
		// the ninth ticket anchored nothing: it was never the oldest unserved with a chance
		for _, w := range res.Waiting {
			if w.Ticket != 8 {
				t.Fatalf("waiting %+v", res.Waiting)
			}
		}
	}
}

// A shaped pass reports the tickets past their expiry as expired, matches none of them and
// lists none as waiting: the service takes them out of the queue by this list.
func TestShapedPassReportsTheExpiredTickets(t *testing.T) {
	t.Parallel()
	cfg := matchrules.Config{TeamSize: 1, Interval: wide(), Shape: testqueue.Symmetric(3, 1)}
	tk := solos(10, 20, 30, 40)
	tk[0].ExpiresAt, tk[2].ExpiresAt = 50, 100 // the pass runs at 100: both past
	res, err := Run(tk, 100, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []matchpool.Expiry{{Ticket: 0, Reason: matchpool.ReasonTTL}, {Ticket: 2, Reason: matchpool.ReasonTTL}}
	if !slices.Equal(res.Expired, want) {
		t.Fatalf("expired %+v, want %+v", res.Expired, want)
	}
	if len(res.Matches) != 0 || len(res.Waiting) != 2 {
		t.Fatalf("matches %+v, waiting %+v: want none, and tickets 1 and 3 waiting", res.Matches, res.Waiting)
	}
}

// A match reports an attribute by the first rule on it that has a value to report: a rule
// that binds none of the match's tickets, whose values differ, leaves it to the next.
func TestShapedMatchReportsAnAttributeByTheFirstRuleWithAValue(t *testing.T) {
	t.Parallel()
	cfg := matchrules.Config{TeamSize: 1, Interval: wide(), Shape: testqueue.Symmetric(3, 1),
		Attributes: map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString}},
		Rules: []matchrules.Rule{
			{Name: "soon", Kind: matchrules.RuleEqual, Attribute: "mode", OptionalAfterS: after(5)},
			{Name: "later", Kind: matchrules.RuleEqual, Attribute: "mode", OptionalAfterS: after(30)},
		}}
	tk := solos(10, 20, 30)
	for i, m := range []string{"a", "b", "b"} {
		tk[i].Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue(m)}
	}
	tk[0].WaitingSince, tk[1].WaitingSince, tk[2].WaitingSince = 60, 90, 90 // at 100: 40, 10, 10 s
	res, err := Run(tk, 100, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 {
		t.Fatalf("matches %+v, waiting %+v: want one of the three", res.Matches, res.Waiting)
	}
	want := []matchpool.MatchAttribute{{Name: "mode", Value: matchrules.StringValue("b")}} // "later" binds the two of 10 s
	if got := res.Matches[0].Attributes; len(got) != 1 || got[0].Name != "mode" || got[0].Value.Str != "b" {
		t.Fatalf("attributes %+v, want %+v", got, want)
	}
}

func TestShapedAsymmetricTeams(t *testing.T) {
	// One monster against four hunters: the monster's rating against the hunters' average.
	cfg := matchrules.Config{TeamSize: 4, Interval: wide(), Shape: []matchrules.TeamDef{{Name: "monster", Size: 1}, {Name: "hunters", Size: 4}}}
	tk := solos(1000, 1000, 1000, 1000, 1500, 1000)
	tk[3] = matchpool.Ticket{Ratings: []float64{900, 1100}, WaitingSince: 3, ExpiresAt: math.Inf(1)}
	res, err := Run(tk, 100, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 {
		t.Fatalf("matches = %d, want 1", len(res.Matches))
	}
	m := res.Matches[0]
	if m.Shaped[0].Name != "monster" || len(m.Shaped[0].Players) != 1 || len(m.Shaped[1].Players) != 4 {
		t.Fatalf("teams %+v", m.Shaped)
	}
	for _, team := range m.Shaped {
		if team.Total/float64(len(team.Players)) != 1000 {
			t.Fatalf("team %s averages %g: the most even split puts a 1000 solo on the monster's side",
				team.Name, team.Total/float64(len(team.Players)))
		}
	}
	if m.AverageDifference != 0 {
		t.Fatalf("average difference %g, want 0", m.AverageDifference)
	}
}

func TestShapedRoleComposition(t *testing.T) {
	// 5v5 with one tank, two healers, two dps per team. Ten dps come first; then the
	// tanks and healers the teams need.
	comp := map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}, "healer": {Min: 2, Max: 2}, "dps": {Min: 2, Max: 2}}
	cfg := matchrules.Config{TeamSize: 5, Interval: wide(), Roles: []string{"tank", "healer", "dps"},
		Shape: []matchrules.TeamDef{{Size: 5, Composition: comp}, {Size: 5, Composition: comp}}}
	var tk []matchpool.Ticket
	add := func(n int, roles ...string) {
		for range n {
			tk = append(tk, matchpool.Ticket{Ratings: []float64{1000 + float64(len(tk))}, WaitingSince: float64(len(tk)),
				ExpiresAt: math.Inf(1), Roles: [][]string{roles}})
		}
	}
	add(10, "dps")
	add(2, "tank")
	add(4, "healer", "dps")
	add(4, "dps")
	res, err := Run(tk, 100, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 {
		t.Fatalf("matches = %d, want 1", len(res.Matches))
	}
	for _, team := range res.Matches[0].Shaped {
		count := map[string]int{}
		for p, r := range team.Roles {
			count[r]++
			if !slices.Contains(tk[team.Players[p].Ticket].Roles[0], r) {
				t.Fatalf("player %v plays %s, which he did not list", team.Players[p], r)
			}
		}
		if count["tank"] != 1 || count["healer"] != 2 || count["dps"] != 2 {
			t.Fatalf("team roles %v, want 1 tank, 2 healers, 2 dps", count)
		}
	}
	if len(res.Waiting) == 0 || res.Waiting[0].Rule != matchrules.WaitTeams {
		t.Fatalf("the dps left waiting say %+v, want %q", res.Waiting, matchrules.WaitTeams)
	}
}

func TestShapedStartsShortAfterMinSize(t *testing.T) {
	// A 5v5 that may start as 4v4 once its anchor waited 90 s.
	minSize := []matchrules.Step{{AfterS: 0, Value: 5}, {AfterS: 90, Value: 4}}
	cfg := matchrules.Config{TeamSize: 5, Interval: wide(), Shape: []matchrules.TeamDef{{Size: 5, MinSize: minSize}, {Size: 5, MinSize: minSize}}}
	tk := solos(1, 2, 3, 4, 5, 6, 7, 8, 9)
	res, err := Run(tk, 80, cfg)
	if err != nil || len(res.Matches) != 0 {
		t.Fatalf("at 80 s: %d matches (%v), want none of 9 players", len(res.Matches), err)
	}
	res, err = Run(tk, 90, cfg)
	if err != nil || len(res.Matches) != 1 {
		t.Fatalf("at 90 s: %d matches (%v), want one", len(res.Matches), err)
	}
	open := 0
	for _, team := range res.Matches[0].Shaped {
		open += team.OpenSlots
		if len(team.Players) < 4 {
			t.Fatalf("team of %d players, under the minimum 4", len(team.Players))
		}
	}
	if open != 1 {
		t.Fatalf("open slots %d, want 1 (9 players in a 5v5)", open)
	}
}

func TestShapedPartyMix(t *testing.T) {
	cfg := matchrules.Config{TeamSize: 2, Interval: wide(), Shape: testqueue.Symmetric(2, 2),
		Rules: []matchrules.Rule{{Name: "premades", Kind: matchrules.RulePartyMix}}}
	party := matchpool.Ticket{Ratings: []float64{1000, 1000}, ExpiresAt: math.Inf(1)}
	tk := append([]matchpool.Ticket{party}, solos(1000, 1000)...)
	res, err := Run(tk, 10, cfg)
	if err != nil || len(res.Matches) != 0 {
		t.Fatalf("a party of 2 against two solos: %d matches (%v), want none", len(res.Matches), err)
	}
	if len(res.Waiting) == 0 || res.Waiting[0].Rule != "premades" {
		t.Fatalf("waiting %+v, want on premades", res.Waiting)
	}
	res, err = Run(append(tk, party), 10, cfg)
	if err != nil || len(res.Matches) != 1 || len(res.Matches[0].Tickets) != 2 {
		t.Fatalf("two parties of 2: %+v (%v), want them matched together", res.Matches, err)
	}
}

func TestShapedValidation(t *testing.T) {
	roles := []string{"tank", "dps"}
	cases := []struct {
		name  string
		cfg   matchrules.Config
		field string
	}{
		{"one team", matchrules.Config{Shape: testqueue.Symmetric(1, 5)}, "teams"},
		{"too many teams", matchrules.Config{Shape: testqueue.Symmetric(65, 1)}, "teams"},
		{"size", matchrules.Config{Shape: []matchrules.TeamDef{{Size: 0}, {Size: 2}}}, "teams[0].size"},
		{"names", matchrules.Config{Shape: []matchrules.TeamDef{{Name: "a", Size: 1}, {Name: "a", Size: 1}}}, "teams[1].name"},
		{"min size above size", matchrules.Config{Shape: []matchrules.TeamDef{{Size: 2, MinSize: []matchrules.Step{{AfterS: 0, Value: 3}}}, {Size: 2}}}, "teams[0].min_size[0].value"},
		{"min size grows", matchrules.Config{Shape: []matchrules.TeamDef{{Size: 5, MinSize: []matchrules.Step{{AfterS: 0, Value: 4}, {AfterS: 10, Value: 5}}}, {Size: 5}}}, "teams[0].min_size[1].value"},
		{"min size order", matchrules.Config{Shape: []matchrules.TeamDef{{Size: 5, MinSize: []matchrules.Step{{AfterS: 0, Value: 5}, {AfterS: 0, Value: 4}}}, {Size: 5}}}, "teams[0].min_size[1].after_s"},
		{"composition without roles", matchrules.Config{Shape: []matchrules.TeamDef{{Size: 2, Composition: map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}}, {Size: 2}}}, "teams[0].composition"},
		{"unknown role", matchrules.Config{Roles: roles, Shape: []matchrules.TeamDef{{Size: 2, Composition: map[string]matchrules.RoleRange{"mage": {Min: 1, Max: 1}}}, {Size: 2}}}, "teams[0].composition.mage"},
		{"minimums overfill", matchrules.Config{Roles: roles, Shape: []matchrules.TeamDef{{Size: 2, Composition: map[string]matchrules.RoleRange{"tank": {Min: 2, Max: 2}, "dps": {Min: 1, Max: 2}}}, {Size: 2}}}, "teams[0].composition"},
		{"maximums underfill", matchrules.Config{Roles: roles, Shape: []matchrules.TeamDef{{Size: 3, Composition: map[string]matchrules.RoleRange{"tank": {Min: 0, Max: 1}, "dps": {Min: 0, Max: 1}}}, {Size: 3}}}, "teams[0].composition"},
		{"greedy pairs", matchrules.Config{Strategy: matchrules.GreedyPairs, Shape: testqueue.Symmetric(3, 2)}, "strategy"},
		{"repeated role", matchrules.Config{Roles: []string{"tank", "tank"}}, "roles[1]"},
		{"party mix difference", matchrules.Config{Rules: []matchrules.Rule{{Name: "p", Kind: matchrules.RulePartyMix, MaxDifference: -1}}}, "rules[0].max_difference"},
		{"reserved name", matchrules.Config{Rules: []matchrules.Rule{{Name: "teams", Kind: matchrules.RulePartyMix}}}, "rules[0].name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.TeamSize = max(c.cfg.TeamSize, 2)
			c.cfg.Interval = wide()
			err := c.cfg.Validate()
			if apperr.CodeOf(err) != apperr.Invalid || !hasField(err, c.field) {
				t.Fatalf("Validate() = %v, want a fault naming %s", err, c.field)
			}
		})
	}
}

func TestShapedTicketValidation(t *testing.T) {
	one := map[string]matchrules.RoleRange{"tank": {Min: 0, Max: 1}}
	cfg := matchrules.Config{TeamSize: 4, Interval: wide(), Roles: []string{"tank", "dps"},
		Shape: []matchrules.TeamDef{{Name: "monster", Size: 1, Composition: one}, {Name: "hunters", Size: 4, Composition: one}}}
	cases := []struct {
		name   string
		ticket matchpool.Ticket
		field  string
	}{
		{"party larger than every team", matchpool.Ticket{Ratings: make([]float64, 5)}, "tickets[0].ratings"},
		{"unknown role", matchpool.Ticket{Ratings: []float64{1}, Roles: [][]string{{"mage"}}}, "tickets[0].roles[0][0]"},
		{"repeated role", matchpool.Ticket{Ratings: []float64{1}, Roles: [][]string{{"tank", "tank"}}}, "tickets[0].roles[0][1]"},
		{"more lists than players", matchpool.Ticket{Ratings: []float64{1}, Roles: [][]string{{"tank"}, {"dps"}}}, "tickets[0].roles"},
		{"a party no composition takes", matchpool.Ticket{Ratings: []float64{1, 2}, Roles: [][]string{{"tank"}, {"tank"}}}, "tickets[0].roles"},
		{"backfill", matchpool.Ticket{Backfill: &matchpool.Backfill{OpenSlots: [2]int{1, 0}, Teams: [2]teams.Roster{{Players: []float64{1}}}}}, "tickets[0].backfill"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.ticket.ExpiresAt = math.Inf(1)
			_, err := Run([]matchpool.Ticket{c.ticket}, 0, cfg)
			if !hasField(err, c.field) {
				t.Fatalf("Run() = %v, want a fault naming %s", err, c.field)
			}
		})
	}
}

func TestPartyMixOnTwoTeams(t *testing.T) {
	// The two-team pass judges party_mix on the split it made: a party of 3 against three
	// solos waits; against another party of 3 it plays.
	cfg := matchrules.Config{TeamSize: 3, Interval: wide(), Rules: []matchrules.Rule{{Name: "premades", Kind: matchrules.RulePartyMix}}}
	party := matchpool.Ticket{Ratings: []float64{1000, 1000, 1000}, ExpiresAt: math.Inf(1)}
	tk := append([]matchpool.Ticket{party}, solos(1000, 1000, 1000)...)
	res, err := Run(tk, 10, cfg)
	if err != nil || len(res.Matches) != 0 {
		t.Fatalf("a party of 3 against solos: %d matches (%v), want none", len(res.Matches), err)
	}
	if len(res.Waiting) == 0 || res.Waiting[0].Rule != "premades" || !res.Waiting[0].Found {
		t.Fatalf("waiting %+v, want on premades", res.Waiting)
	}
	cfg.Rules[0].MaxDifference = 2
	if res, err = Run(tk, 10, cfg); err != nil || len(res.Matches) != 1 {
		t.Fatalf("max_difference 2: %d matches (%v), want 1", len(res.Matches), err)
	}
	cfg.Rules[0].MaxDifference = 0
	if res, err = Run(append(tk[:1:1], party), 10, cfg); err != nil || len(res.Matches) != 1 {
		t.Fatalf("two parties of 3: %d matches (%v), want 1", len(res.Matches), err)
	}
}

// Why a ticket waits in a queue partitioned by an equal rule: the interval when tickets of
// its value search but none is near enough, the rule when none of its value searches.
func TestWaitsOnTheIntervalOrThePartitioningRule(t *testing.T) {
	cfg := matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 50}},
		Attributes: map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString}},
		Rules:      []matchrules.Rule{{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}}}
	mode := func(m string, rating float64, since float64) matchpool.Ticket {
		return matchpool.Ticket{Ratings: []float64{rating}, WaitingSince: since, ExpiresAt: math.Inf(1),
			Attributes: map[string]matchrules.Value{"mode": matchrules.StringValue(m)}}
	}
	tk := []matchpool.Ticket{mode("ranked", 300, 0), mode("casual", 1000, 1), mode("ranked", 2000, 2)}
	res, err := Run(tk, 10, cfg)
	if err != nil || len(res.Matches) != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	got := map[int]string{}
	for _, w := range res.Waiting {
		got[w.Ticket] = w.Rule + ": " + w.Detail()
	}
	want := map[int]string{
		0: "interval: no candidate within the interval",
		1: "mode: only 0 candidates with the same mode",
		2: "interval: no candidate within the interval",
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("ticket %d waits on %q, want %q", i, got[i], w)
		}
	}
}

// A role queue whose searching players cannot fill a composition's minimum says which role
// is missing, without walking its candidates.
func TestShapedWaitsOnAScarceRole(t *testing.T) {
	comp := map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}
	cfg := matchrules.Config{TeamSize: 2, Interval: wide(), Roles: []string{"tank", "dps"},
		Shape: []matchrules.TeamDef{{Size: 2, Composition: comp}, {Size: 2, Composition: comp}}}
	tk := solos(1000, 1000, 1000, 1000, 1000)
	for i := range tk {
		tk[i].Roles = [][]string{{"dps"}}
	}
	tk[0].Roles = [][]string{{"tank"}} // one tank for two teams that each need one
	res, err := Run(tk, 10, cfg)
	if err != nil || len(res.Matches) != 0 {
		t.Fatalf("%+v, %v", res.Matches, err)
	}
	if len(res.Waiting) == 0 || res.Waiting[0].Detail() != "too few players searching who play tank for the teams' compositions" {
		t.Fatalf("waiting %+v", res.Waiting)
	}
	tk[1].Roles = [][]string{{"tank", "dps"}}
	if res, err = Run(tk, 10, cfg); err != nil || len(res.Matches) != 1 {
		t.Fatalf("with a second tank: %+v, %v", res.Matches, err)
	}
}

// A pass judges each party's roles by its own lists: the answers it keeps for parties of
// the same roles are not given to a party whose players list the same names split
// otherwise.
func TestShapedJudgesEachPartysRolesByItsOwnLists(t *testing.T) {
	cfg := matchrules.Config{TeamSize: 3, Interval: wide(), Roles: []string{"tank", "dps"},
		Shape: testqueue.Symmetric(2, 3)}
	for k := range cfg.Shape {
		cfg.Shape[k].Composition = map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}
	}
	fits := matchpool.Ticket{Ratings: []float64{1, 2}, Roles: [][]string{{"dps", "tank"}, {"dps"}}, ExpiresAt: math.Inf(1)}
	twoTanks := matchpool.Ticket{Ratings: []float64{1, 2, 3}, Roles: [][]string{{"dps"}, {"tank"}, {"tank"}}, ExpiresAt: math.Inf(1)}
	other := matchpool.Ticket{Ratings: []float64{1, 2, 3}, Roles: [][]string{{"dps", "tank"}, {"tank"}}, ExpiresAt: math.Inf(1)}
	// other lists dps, tank, tank as twoTanks does, in two lists: it fits, twoTanks does not.
	_, err := Run([]matchpool.Ticket{fits, other, twoTanks}, 0, cfg)
	if !hasField(err, "tickets[2].roles") || hasField(err, "tickets[1].roles") || hasField(err, "tickets[0].roles") {
		t.Fatalf("Run() = %v, want a fault naming tickets[2].roles alone", err)
	}
}
