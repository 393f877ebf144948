package sim

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// rulesScenario is the rules preset, smaller; under -race or -short, matches / 3.
func rulesScenario(matches int) Scenario {
	sc := testPreset("rules", matches)
	sc.Population.Players = 4000
	return sc
}

func configuration(t *testing.T, sc *Scenario, name string) Configuration {
	t.Helper()
	for _, c := range sc.Configurations {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no configuration %q", name)
	return Configuration{}
}

func TestAttributeValidation(t *testing.T) {
	t.Parallel()
	modes := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name string
		d    AttributeDist
		want string // "" for valid; else a part of the error
	}{
		{"mode", AttributeDist{Type: "string", Values: modes}, ""},
		{"mode", AttributeDist{Type: "string", Values: modes, Weights: []float64{1, 0, 2}}, ""},
		{"maps", AttributeDist{Type: "string_list", Values: modes, Choose: 3}, ""},
		{"level", AttributeDist{Type: "number", Normal: &NormalDist{Mean: 20, SD: 5}}, ""},
		{"level", AttributeDist{Type: "number", Uniform: &UniformDist{Min: 1, Max: 60}}, ""},
		{"mode", AttributeDist{Type: "text", Values: modes}, "attributes.mode.type"},
		{"mode", AttributeDist{Type: "string"}, "attributes.mode.values"},
		{"mode", AttributeDist{Type: "string", Values: []string{"a", ""}}, "attributes.mode.values[1]"},
		{"mode", AttributeDist{Type: "string", Values: []string{"a", "b", "a"}}, "attributes.mode.values[2]"},
		{"mode", AttributeDist{Type: "string", Values: modes, Weights: []float64{1, 1}}, "attributes.mode.weights"},
		{"mode", AttributeDist{Type: "string", Values: modes, Weights: []float64{1, -1, 1}}, "attributes.mode.weights[1]"},
		{"mode", AttributeDist{Type: "string", Values: modes, Weights: []float64{0, 0, 0}}, "attributes.mode.weights"},
		{"mode", AttributeDist{Type: "string", Values: modes, Choose: 2}, "attributes.mode.choose"},
		{"mode", AttributeDist{Type: "string", Values: modes, Normal: &NormalDist{SD: 1}}, "attributes.mode"},
		{"maps", AttributeDist{Type: "string_list", Values: modes}, "attributes.maps.choose"},
		{"maps", AttributeDist{Type: "string_list", Values: modes, Choose: 4}, "attributes.maps.choose"},
		{"maps", AttributeDist{Type: "string_list", Values: modes, Choose: 2, Weights: []float64{1, 0, 0}}, "attributes.maps.weights"},
		{"level", AttributeDist{Type: "number"}, "attributes.level"},
		{"level", AttributeDist{Type: "number", Normal: &NormalDist{SD: 1}, Uniform: &UniformDist{}}, "attributes.level"},
		{"level", AttributeDist{Type: "number", Normal: &NormalDist{SD: -1}}, "attributes.level.normal"},
		{"level", AttributeDist{Type: "number", Normal: &NormalDist{Mean: math.NaN(), SD: 1}}, "attributes.level.normal"},
		{"level", AttributeDist{Type: "number", Uniform: &UniformDist{Min: 2, Max: 1}}, "attributes.level.uniform"},
		{"level", AttributeDist{Type: "number", Values: modes, Uniform: &UniformDist{}}, "attributes.level"},
		{"rating", AttributeDist{Type: "number", Uniform: &UniformDist{}}, "attributes.rating"},
		{"", AttributeDist{Type: "string", Values: modes}, "attributes"},
	} {
		err := tc.d.validate(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %+v: %v", tc.name, tc.d, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %+v: error %v, want one naming %s", tc.name, tc.d, err, tc.want)
		}
	}
}

func TestRulesConfigurationValidation(t *testing.T) {
	t.Parallel()
	mode := Rule{Name: "mode", Type: "equal", Attribute: "mode"}
	for _, tc := range []struct {
		name  string
		edit  func(sc *Scenario, cf *Configuration)
		want  string // "" for valid; else a part of the error
		field string // and another
	}{
		{"as the preset", func(*Scenario, *Configuration) {}, "", ""},
		{"a number attribute and a distance rule", func(sc *Scenario, cf *Configuration) {
			sc.Attributes["level"] = AttributeDist{Type: "number", Normal: &NormalDist{Mean: 30, SD: 10}}
			cf.Rules = append(cf.Rules, Rule{Name: "level", Type: "distance", Attribute: "level",
				Expansions: []Step{{AfterS: 0, Value: 5}, {AfterS: 30, Value: 20}}})
		}, "", ""},
		{"an undeclared attribute", func(_ *Scenario, cf *Configuration) {
			cf.Rules = append(cf.Rules, Rule{Name: "region", Type: "equal", Attribute: "region"})
		}, "rules[2].attribute", `"region"`},
		{"no attributes at all", func(sc *Scenario, _ *Configuration) { sc.Attributes = nil }, "rules[0].attribute", `"mode"`},
		{"intersect on a string", func(_ *Scenario, cf *Configuration) {
			cf.Rules = []Rule{{Name: "m", Type: "intersect", Attribute: "mode"}}
		}, "rules[0].attribute", "string_list"},
		{"an unknown type", func(_ *Scenario, cf *Configuration) { cf.Rules[0].Type = "same" }, "rules[0].type", ""},
		{"a built-in name", func(_ *Scenario, cf *Configuration) { cf.Rules[0].Name = "interval" }, "rules[0].name", ""},
		{"a name twice", func(_ *Scenario, cf *Configuration) { cf.Rules[1].Name = "mode" }, "rules[1].name", ""},
		{"a name the API refuses", func(_ *Scenario, cf *Configuration) { cf.Rules[0].Name = "mode!" }, "rules[0].name", ""},
		{"expansions on equal", func(_ *Scenario, cf *Configuration) { cf.Rules[0].Expansions = []Step{{AfterS: 0, Value: 1}} }, "rules[0].expansions", ""},
		{"expansions out of order", func(_ *Scenario, cf *Configuration) {
			cf.Rules = append(cf.Rules, Rule{Name: "fair", Type: "team_balance", Expansions: []Step{{AfterS: 0, Value: 50}, {AfterS: 10, Value: 20}}})
		}, "rules[2].expansions[1].value", ""},
		{"too many expansions", func(_ *Scenario, cf *Configuration) {
			cf.Rules = append(cf.Rules, Rule{Name: "fair", Type: "team_balance", Expansions: steps(33)})
		}, "rules[2].expansions", "32"},
		{"optional_after_s 0", func(_ *Scenario, cf *Configuration) { cf.Rules[0].OptionalAfterS = new(0.0) }, "rules[0].optional_after_s", ""},
		{"min_common over the list", func(_ *Scenario, cf *Configuration) { cf.Rules[1].MinCommon = 65 }, "rules[1].min_common", ""},
		{"rules on the pairing", func(_ *Scenario, cf *Configuration) { cf.Matcher = "pairing" }, "tick matcher only", `"pairing"`},
		{"rules on no matchmaking", func(_ *Scenario, cf *Configuration) { cf.Matcher, cf.Widening = "none", nil }, "tick matcher only", `"none"`},
		{"attributes without rules on the pairing", func(_ *Scenario, cf *Configuration) { cf.Matcher, cf.Rules = "pairing", nil }, "", ""},
		{"a rule with its mode", func(_ *Scenario, cf *Configuration) { cf.Rules = []Rule{mode} }, "", ""},
	} {
		sc := rulesScenario(100)
		sc.Attributes = maps.Clone(sc.Attributes)
		cf := configuration(t, &sc, "mode + maps")
		cf.Rules = slices.Clone(cf.Rules)
		tc.edit(&sc, &cf)
		sc.Configurations = []Configuration{cf}
		err := sc.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%s: error %v, want one naming %s and %s", tc.name, err, tc.want, tc.field)
		case err != nil && !strings.Contains(err.Error(), `configuration "mode + maps"`):
			t.Errorf("%s: error %v does not name the configuration", tc.name, err)
		}
	}
}

// The draws follow the declared distributions: weights, lists of distinct values, numbers.
func TestAttributeDraws(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	const n = 20_000
	mode := AttributeDist{Type: "string", Values: []string{"a", "b", "c"}, Weights: []float64{6, 3, 1}}
	counts := map[string]int{}
	for range n {
		counts[mode.draw(rng).Str]++
	}
	for v, w := range map[string]float64{"a": 0.6, "b": 0.3, "c": 0.1} {
		if got := float64(counts[v]) / n; math.Abs(got-w) > 0.015 {
			t.Errorf("mode %s drawn %.3f of the time, want %.2f", v, got, w)
		}
	}
	// 3 of 8 maps, the last never (weight 0): each of the others in 3/7 of the lists.
	lists := AttributeDist{Type: "string_list", Choose: 3, Values: []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"},
		Weights: []float64{1, 1, 1, 1, 1, 1, 1, 0}}
	counts = map[string]int{}
	for range n {
		v := lists.draw(rng)
		if v.Type != matchrules.TypeStringList || len(v.List) != 3 {
			t.Fatalf("a list of %v", v)
		}
		for i, m := range v.List {
			if slices.Contains(v.List[:i], m) {
				t.Fatalf("%v lists %s twice", v.List, m)
			}
			counts[m]++
		}
	}
	if counts["m7"] != 0 {
		t.Errorf("a map of weight 0 drawn %d times", counts["m7"])
	}
	for _, m := range lists.Values[:7] {
		if got := float64(counts[m]) / n; math.Abs(got-3.0/7) > 0.02 {
			t.Errorf("map %s in %.3f of the lists, want %.3f", m, got, 3.0/7)
		}
	}
	level := AttributeDist{Type: "number", Normal: &NormalDist{Mean: 30, SD: 10}}
	sum, sq := 0.0, 0.0
	for range n {
		x := level.draw(rng).Num
		sum, sq = sum+x, sq+x*x
	}
	if mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n)); math.Abs(mean-30) > 0.3 || math.Abs(sd-10) > 0.3 {
		t.Errorf("level: mean %.2f, sd %.2f; want 30, 10", mean, sd)
	}
	u := AttributeDist{Type: "number", Uniform: &UniformDist{Min: 5, Max: 6}}
	for range 1000 {
		if x := u.draw(rng).Num; x < 5 || x > 6 {
			t.Fatalf("uniform on [5, 6] drew %g", x)
		}
	}
}

// ruleGuard checks every match the inner matcher makes: its tickets share one mode and at
// least one map, and each ticket is whole in it.
type ruleGuard struct {
	inner            Matcher
	matches, breaks  int
	oneMode, someMap int
}

func (g *ruleGuard) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	matches, expired := g.inner.Tick(waiting, now)
	owner := map[int]int{}
	for ti, tk := range waiting {
		for _, p := range tk.Players {
			owner[p] = ti
		}
	}
	for _, m := range matches {
		var tickets []int
		for _, team := range m.Teams {
			for _, p := range team {
				if ti := owner[p]; !slices.Contains(tickets, ti) {
					tickets = append(tickets, ti)
				}
			}
		}
		first := waiting[tickets[0]].Attributes
		sameMode, common := true, slices.Clone(first["maps"].List)
		for _, ti := range tickets[1:] {
			a := waiting[ti].Attributes
			sameMode = sameMode && a["mode"].Str == first["mode"].Str
			common = slices.DeleteFunc(common, func(m string) bool { return !slices.Contains(a["maps"].List, m) })
		}
		g.matches++
		if sameMode {
			g.oneMode++
		}
		if len(common) > 0 {
			g.someMap++
		}
		if !sameMode || len(common) == 0 {
			g.breaks++
		}
	}
	return matches, expired
}

// TestRulesConfigurationsKeepTheRules runs the rules preset's queue with mode and maps under
// the guard: every match's tickets play one mode and share a map. The same queue without
// rules breaks them in most matches, so the guard can tell.
func TestRulesConfigurationsKeepTheRules(t *testing.T) {
	t.Parallel()
	sc := rulesScenario(400)
	for _, tc := range []struct {
		name      string
		keepsAll  bool
		mostBreak bool
	}{{"mode + maps", true, false}, {"no rules", false, true}} {
		cf := configuration(t, &sc, tc.name)
		r, err := newRun(&sc, cf)
		if err != nil {
			t.Fatal(err)
		}
		pass := r.matcher.(*QueuePass)
		g := &ruleGuard{inner: pass}
		r.matcher = g
		if err := r.loop(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if g.matches < sc.Matches {
			t.Fatalf("%s: the guard saw %d matches", tc.name, g.matches)
		}
		if tc.keepsAll && g.breaks > 0 {
			t.Errorf("%s: %d of %d matches break the rules (%d of one mode, %d with a common map)", tc.name, g.breaks, g.matches, g.oneMode, g.someMap)
		}
		if tc.mostBreak && g.breaks < g.matches/2 {
			t.Errorf("%s: only %d of %d matches break the rules: the guard checks too little", tc.name, g.breaks, g.matches)
		}
		if held := held(pass.WaitingOn()); tc.keepsAll && len(held) == 0 {
			t.Errorf("%s: no anchor was held", tc.name)
		} else if held := held[0].Rule; tc.keepsAll && (held != "mode" && held != "maps" || !r.res.Rules) {
			t.Errorf("%s: held most by %q (rules %v), not by a rule of the queue's", tc.name, held, r.res.Rules)
		}
	}
}

// The attributes have a stream of their own: the rule-free configuration of the rules
// preset runs exactly as without attributes (the same arrivals, players and matches).
func TestAttributesLeaveTheOtherDrawsAlone(t *testing.T) {
	t.Parallel()
	sc := rulesScenario(300)
	cf := configuration(t, &sc, "no rules")
	if a, b, same := runsWithAndWithout(t, &sc, cf, func(sc *Scenario) { sc.Attributes = nil }); !same {
		t.Errorf("attributes changed the rule-free run:\n%s\n%s", a, b)
	}
}

// runsWithAndWithout runs cf on sc, then again once drop has taken something out of sc, and
// says whether the two runs are the same (their summaries, as text, and their samples).
func runsWithAndWithout(t *testing.T, sc *Scenario, cf Configuration, drop func(*Scenario)) (with, without string, same bool) {
	t.Helper()
	a, err := Run(context.Background(), sc, cf, nil)
	if err != nil {
		t.Fatal(err)
	}
	drop(sc)
	b, err := Run(context.Background(), sc, cf, nil)
	if err != nil {
		t.Fatal(err)
	}
	// As text: a summary's NaNs (nothing to report) are not DeepEqual to themselves.
	with, without = fmt.Sprintf("%+v", Summarize(a)), fmt.Sprintf("%+v", Summarize(b))
	same = with == without && reflect.DeepEqual(a.Waits, b.Waits) && reflect.DeepEqual(a.PairDifferences, b.PairDifferences)
	return with, without, same
}

// The rules preset's report is the same byte for byte for the same seed, whatever the
// workers, and says which rule held the tickets.
func TestRulesSameSeedSameReport(t *testing.T) {
	t.Parallel()
	sc := rulesScenario(300)
	// The role queues have a test of their own, on fewer matches: their passes cost more.
	sc.Configurations = slices.DeleteFunc(sc.Configurations, func(c Configuration) bool { return len(c.Composition) > 0 })
	ctx := context.Background()
	// Which rule held the tickets longest, not by how much: the share moves with the run's
	// length (fewer matches under -race) and with the look-ahead for even teams.
	one, report := sameReport(t, &sc, "held most by", "held_most_by", "mode + maps")
	if !regexp.MustCompile(`no rules +\d+ .* interval \d+%`).Match(report) {
		t.Errorf("the rule-free run is not held most by the interval:\n%s", report)
	}
	sc.Seed++
	sc.Configurations = sc.Configurations[:1]
	other, err := Compare(ctx, &sc, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", one.Summaries[0]) == fmt.Sprintf("%+v", other.Summaries[0]) {
		t.Fatal("another seed gave the same run")
	}
}
