package sim

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// rolesScenario is rulesScenario with its configuration name, the scenario's roles and the
// configuration's composition copied, for a test to edit.
func rolesScenario(t *testing.T, matches int, name string) (Scenario, Configuration) {
	t.Helper()
	sc := rulesScenario(matches)
	roles := *sc.Roles
	roles.Names, roles.Picks = slices.Clone(roles.Names), slices.Clone(roles.Picks)
	for i := range roles.Picks {
		roles.Picks[i].Roles = slices.Clone(roles.Picks[i].Roles)
	}
	sc.Roles = &roles
	cf := configuration(t, &sc, name)
	cf.Composition = maps.Clone(cf.Composition)
	return sc, cf
}

func TestRoleValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(sc *Scenario, cf *Configuration)
		want []string // nil for valid; else parts of the error
	}{
		{"as the preset", func(*Scenario, *Configuration) {}, nil},
		{"a pick of any role", func(sc *Scenario, _ *Configuration) {
			sc.Roles.Picks = append(sc.Roles.Picks, RolePick{Weight: 5})
		}, nil},
		{"a free role", func(_ *Scenario, cf *Configuration) { delete(cf.Composition, "dps") }, nil},
		{"a weight of 0", func(sc *Scenario, _ *Configuration) { sc.Roles.Picks[0].Weight = 0 }, nil},
		{"no role names", func(sc *Scenario, _ *Configuration) { sc.Roles.Names = nil }, []string{"roles.names", "1 to 16"}},
		{"too many role names", func(sc *Scenario, _ *Configuration) {
			for i := range 14 {
				sc.Roles.Names = append(sc.Roles.Names, fmt.Sprintf("r%d", i))
			}
		}, []string{"roles.names", "got 17"}},
		{"a role named twice", func(sc *Scenario, _ *Configuration) { sc.Roles.Names[2] = "tank" }, []string{"roles.names[2]", `"tank"`}},
		{"a name the API refuses", func(sc *Scenario, _ *Configuration) { sc.Roles.Names[0] = "tank!" }, []string{"roles.names[0]"}},
		{"no picks", func(sc *Scenario, _ *Configuration) { sc.Roles.Picks = nil }, []string{"roles.picks"}},
		{"a pick of an unknown role", func(sc *Scenario, _ *Configuration) { sc.Roles.Picks[1].Roles = []string{"mage"} },
			[]string{"roles.picks[1].roles[0]", `"mage"`}},
		{"a pick naming a role twice", func(sc *Scenario, _ *Configuration) { sc.Roles.Picks[3].Roles[1] = "dps" },
			[]string{"roles.picks[3].roles[1]", `"dps"`}},
		{"a negative weight", func(sc *Scenario, _ *Configuration) { sc.Roles.Picks[2].Weight = -1 }, []string{"roles.picks[2].weight"}},
		{"a weight of NaN", func(sc *Scenario, _ *Configuration) { sc.Roles.Picks[2].Weight = math.NaN() }, []string{"roles.picks[2].weight"}},
		{"every weight 0", func(sc *Scenario, _ *Configuration) {
			for i := range sc.Roles.Picks {
				sc.Roles.Picks[i].Weight = 0
			}
		}, []string{"roles.picks", "positive weight"}},
		{"a composition without roles", func(sc *Scenario, _ *Configuration) { sc.Roles = nil },
			[]string{`configuration "mode + maps + roles 1/2/2"`, "composition needs the scenario's roles"}},
		{"a composition of an unknown role", func(_ *Scenario, cf *Configuration) { cf.Composition["mage"] = RoleRange{Min: 0, Max: 1} },
			[]string{`configuration "mode + maps + roles 1/2/2"`, "composition.mage", "one of the queue's roles"}},
		{"min over max", func(_ *Scenario, cf *Configuration) { cf.Composition["tank"] = RoleRange{Min: 2, Max: 1} },
			[]string{"composition.tank", "min <= max"}},
		{"max over the team", func(_ *Scenario, cf *Configuration) { cf.Composition["tank"] = RoleRange{Min: 0, Max: 6} },
			[]string{"composition.tank", "size (5)"}},
		{"minimums over the team", func(_ *Scenario, cf *Configuration) { cf.Composition["tank"] = RoleRange{Min: 3, Max: 3} },
			[]string{"composition cannot fill a team", "minimums need 7"}},
		{"maximums short of the team", func(_ *Scenario, cf *Configuration) { cf.Composition["dps"] = RoleRange{Min: 0, Max: 1} },
			[]string{"composition cannot fill a team", "maximums allow 4"}},
		{"a composition on the pairing", func(_ *Scenario, cf *Configuration) { cf.Matcher, cf.Rules = "pairing", nil },
			[]string{"composition runs on the tick matcher only", `"pairing"`}},
		{"a composition with greedy_pairs", func(_ *Scenario, cf *Configuration) { cf.Strategy = matchrules.GreedyPairs },
			[]string{"strategy", "rating_window"}},
	} {
		sc, cf := rolesScenario(t, 100, "mode + maps + roles 1/2/2")
		tc.edit(&sc, &cf)
		sc.Configurations = []Configuration{cf}
		err := sc.Validate()
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want one saying %s", tc.name, err, w)
			}
		}
		// Both teams have the one composition: a fault is said once.
		if err != nil && strings.Count(err.Error(), "composition") > 1 && strings.Contains(err.Error(), "teams[") {
			t.Errorf("%s: %v names the pass's teams, not the configuration's composition", tc.name, err)
		}
	}
}

// A player draws his roles once, by the picks' weights.
func TestRoleDraws(t *testing.T) {
	t.Parallel()
	sc, _ := rolesScenario(t, 100, "roles 1/2/2")
	const n = 20_000
	players := sc.Roles.drawPlayers(n, rand.New(rand.NewPCG(5, 5)))
	counts := map[string]int{}
	for _, rs := range players {
		counts[strings.Join(rs, ",")]++
	}
	for list, w := range map[string]float64{"tank": 0.2, "healer": 0.3, "dps": 0.3, "dps,healer,tank": 0.2} {
		if got := float64(counts[list]) / n; math.Abs(got-w) > 0.015 {
			t.Errorf("%s picked %.3f of the time, want %.2f", list, got, w)
		}
	}
	if len(counts) != 4 {
		t.Errorf("picks %v, want the preset's four", counts)
	}
	if (*RoleDist)(nil).drawPlayers(n, nil) != nil {
		t.Error("a scenario without roles gave its players roles")
	}
}

// teamKeeps says whether a team's roles (played[k] by the player who lists lists[k], any
// role when empty) keep the composition: every player plays a role he lists, each role's
// count within its range (a role the composition does not name is free).
func teamKeeps(played []string, lists [][]string, comp map[string]RoleRange) bool {
	count := map[string]int{}
	for k, r := range played {
		if len(lists[k]) > 0 && !slices.Contains(lists[k], r) {
			return false
		}
		count[r]++
	}
	for role, b := range comp {
		if count[role] < b.Min || count[role] > b.Max {
			return false
		}
	}
	return true
}

// teamCanKeep says whether some choice of roles, one each from the players' lists (of
// names, when a list is empty), keeps the composition: every choice tried.
func teamCanKeep(lists [][]string, names []string, comp map[string]RoleRange) bool {
	played := make([]string, len(lists))
	var try func(k int) bool
	try = func(k int) bool {
		if k == len(lists) {
			return teamKeeps(played, lists, comp)
		}
		options := lists[k]
		if len(options) == 0 {
			options = names
		}
		for _, r := range options {
			if played[k] = r; try(k + 1) {
				return true
			}
		}
		return false
	}
	return try(0)
}

func TestTeamKeeps(t *testing.T) {
	t.Parallel()
	comp := map[string]RoleRange{"tank": {Min: 1, Max: 1}, "healer": {Min: 2, Max: 2}, "dps": {Min: 2, Max: 2}}
	names := []string{"tank", "healer", "dps"}
	lists := [][]string{{"tank"}, {"healer"}, {"healer", "dps"}, {"dps"}, {}}
	for _, tc := range []struct {
		played []string
		keeps  bool
	}{
		{[]string{"tank", "healer", "healer", "dps", "dps"}, true},
		{[]string{"tank", "healer", "dps", "dps", "healer"}, true},
		{[]string{"healer", "healer", "dps", "dps", "tank"}, false}, // the tank-only player heals
		{[]string{"tank", "healer", "dps", "dps", "dps"}, false},    // 3 dps, 1 healer
		{[]string{"tank", "healer", "healer", "dps", "tank"}, false},
	} {
		if got := teamKeeps(tc.played, lists, comp); got != tc.keeps {
			t.Errorf("%v: keeps %v, want %v", tc.played, got, tc.keeps)
		}
	}
	if !teamCanKeep(lists, names, comp) {
		t.Errorf("%v can keep the composition", lists)
	}
	if teamCanKeep([][]string{{"tank"}, {"tank"}, {"healer"}, {"dps"}, {}}, names, comp) {
		t.Error("two tank-only players cannot keep one tank")
	}
}

// roleGuard checks every match the inner matcher makes against a composition: with the
// roles the matcher gave, that they keep it (each player a role his ticket lists, each
// role's count within its range); without, that the players' own roles could.
type roleGuard struct {
	inner   Matcher
	comp    map[string]RoleRange
	names   []string
	players [][]string // each player's own roles
	// matches seen, breaks (a team off the composition), given (matches with roles),
	// solos (solo players whose ticket listed their own roles: the roles they keep).
	matches, breaks, given, solos, solosOff int
}

func (g *roleGuard) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	matches, expired := g.inner.Tick(waiting, now)
	type seat struct{ ticket, slot int }
	at := map[int]seat{}
	for ti, tk := range waiting {
		for i, p := range tk.Players {
			at[p] = seat{ti, i}
		}
	}
	for _, m := range matches {
		g.matches++
		broken := false
		if m.Roles[0] != nil {
			g.given++
		}
		for side, team := range m.Teams {
			lists := make([][]string, len(team))
			for k, p := range team {
				s := at[p]
				if tk := waiting[s.ticket]; tk.Roles != nil {
					lists[k] = tk.Roles[s.slot]
					if len(tk.Players) == 1 {
						g.solos++
						if !slices.Equal(lists[k], g.players[p]) {
							g.solosOff++
						}
					}
				} else {
					lists[k] = g.players[p]
				}
			}
			if m.Roles[side] != nil {
				broken = broken || len(m.Roles[side]) != len(team) || !teamKeeps(m.Roles[side], lists, g.comp)
			} else {
				broken = broken || !teamCanKeep(lists, g.names, g.comp)
			}
		}
		if broken {
			g.breaks++
		}
	}
	return matches, expired
}

// TestRoleConfigurationsKeepTheComposition runs the rules preset's role queues under the
// guard: every match has a role for every player that keeps 1 tank / 2 healers / 2 dps on
// each team, and its solo players play the roles they drew. The same queue without the
// composition (roles ignored) has most of its matches off it, so the guard can tell. The
// configurations with mode and maps keep them too (ruleGuard).
func TestRoleConfigurationsKeepTheComposition(t *testing.T) {
	t.Parallel()
	comp := map[string]RoleRange{"tank": {Min: 1, Max: 1}, "healer": {Min: 2, Max: 2}, "dps": {Min: 2, Max: 2}}
	for _, tc := range []struct {
		name    string
		matches int
		keeps   bool
	}{{"roles 1/2/2", 300, true}, {"mode + maps + roles 1/2/2", 90, true}, {"mode + maps", 300, false}} {
		sc, cf := rolesScenario(t, tc.matches, tc.name)
		r, err := newRun(&sc, cf)
		if err != nil {
			t.Fatal(err)
		}
		pass := r.matcher.(*QueuePass)
		g := &roleGuard{inner: pass, comp: comp, names: sc.Roles.Names, players: r.roles}
		rules := &ruleGuard{inner: g} // mode and maps too
		r.matcher = rules
		if err := r.loop(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if len(cf.Rules) > 0 && rules.breaks > 0 {
			t.Errorf("%s: %d of %d matches break the mode or maps rule", tc.name, rules.breaks, rules.matches)
		}
		if g.matches < sc.Matches {
			t.Fatalf("%s: the guard saw %d matches", tc.name, g.matches)
		}
		switch {
		case tc.keeps && (g.breaks > 0 || g.given != g.matches):
			t.Errorf("%s: %d of %d matches break the composition, %d say the roles", tc.name, g.breaks, g.matches, g.given)
		case tc.keeps && (g.solos == 0 || g.solosOff > 0):
			t.Errorf("%s: %d of %d solo players listed roles not their own", tc.name, g.solosOff, g.solos)
		case !tc.keeps && (g.breaks < g.matches/2 || g.given > 0):
			t.Errorf("%s: only %d of %d matches break the composition (%d say roles): the guard checks too little",
				tc.name, g.breaks, g.matches, g.given)
		}
		teams := pass.WaitingOn()[matchrules.WaitTeams]
		if res := Summarize(r.res); tc.keeps && (!res.Roles || res.RolesRepicked == 0 || teams == 0) {
			t.Errorf("%s: roles %v, re-picked %d, held by the teams %d times", tc.name, res.Roles, res.RolesRepicked, teams)
		}
	}
}

// The roles have a stream of their own: a configuration without a composition runs
// exactly as without the scenario's roles.
func TestRolesLeaveTheOtherDrawsAlone(t *testing.T) {
	t.Parallel()
	sc, cf := rolesScenario(t, 300, "mode + maps")
	if a, b, same := runsWithAndWithout(t, &sc, cf, func(sc *Scenario) { sc.Roles = nil }); !same {
		t.Errorf("roles changed the run without a composition:\n%s\n%s", a, b)
	}
}

// A role queue's report is the same byte for byte for the same seed, whatever the workers,
// and counts the parties that picked roles again.
func TestRolesSameSeedSameReport(t *testing.T) {
	t.Parallel()
	sc := rulesScenario(150)
	sc.Configurations = slices.DeleteFunc(sc.Configurations, func(c Configuration) bool {
		return c.Name != "no rules" && c.Name != "roles 1/2/2" && c.Name != "mode + maps + roles 1/2/2"
	})
	sameReport(t, &sc, "roles re-picked", "roles_repicked", "roles 1/2/2", "teams ")
}

// TestQueuePassGivesRoles: a 2v2 queue of one "a" and one "b" a team, four solos; the
// match comes back with each team sorted by rating and each player's role beside him.
func TestQueuePassGivesRoles(t *testing.T) {
	t.Parallel()
	comp := map[string]matchrules.RoleRange{"a": {Min: 1, Max: 1}, "b": {Min: 1, Max: 1}}
	m, err := NewRuledQueuePass(2, matchrules.RatingWindow, []Step{{AfterS: 0, Value: 100}}, 0, PassRules{Roles: []string{"a", "b"},
		Shape: []matchrules.TeamDef{{Size: 2, Composition: comp}, {Size: 2, Composition: comp}}})
	if err != nil {
		t.Fatal(err)
	}
	waiting := []Ticket{
		{ID: 0, Players: []int{10}, Ratings: []float64{1000}, Roles: [][]string{{"a"}}},
		{ID: 1, Players: []int{11}, Ratings: []float64{1010}, Roles: [][]string{{"a"}}},
		{ID: 2, Players: []int{12}, Ratings: []float64{1020}, Roles: [][]string{{"b"}}},
		{ID: 3, Players: []int{13}, Ratings: []float64{990}, Roles: [][]string{{"b", "a"}}},
	}
	matches, _ := m.Tick(waiting, seconds(1))
	if len(matches) != 1 {
		t.Fatalf("matches %v, want one", matches)
	}
	rating := map[int]float64{10: 1000, 11: 1010, 12: 1020, 13: 990}
	lists := map[int][]string{10: {"a"}, 11: {"a"}, 12: {"b"}, 13: {"b", "a"}}
	for side, team := range matches[0].Teams {
		roles := matches[0].Roles[side]
		if len(team) != 2 || len(roles) != 2 || rating[team[0]] > rating[team[1]] {
			t.Fatalf("team %v with roles %v: want two players by rating, each with a role", team, roles)
		}
		if !teamKeeps(roles, [][]string{lists[team[0]], lists[team[1]]}, map[string]RoleRange{"a": {Min: 1, Max: 1}, "b": {Min: 1, Max: 1}}) {
			t.Errorf("team %v plays %v", team, roles)
		}
	}
	if _, err := NewRuledQueuePass(5, matchrules.RatingWindow, []Step{{AfterS: 0, Value: 100}}, 0, PassRules{Roles: []string{"a"},
		Shape: []matchrules.TeamDef{{Size: 4}, {Size: 4}}}); err == nil {
		t.Error("a pass of two teams of 4 in a 5v5 scenario was taken")
	}
}
