package tick

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// with is a solo ticket with attributes.
func with(rating, since float64, attrs map[string]matchrules.Value) matchpool.Ticket {
	t := solo(rating, since)
	t.Attributes = attrs
	return t
}

func after(s float64) *float64 { return &s }

// ruled is a queue of teamSize with a wide interval and the rules given.
func ruled(teamSize int, rs ...matchrules.Rule) matchrules.Config {
	return matchrules.Config{TeamSize: teamSize, Interval: []matchrules.Step{{AfterS: 0, Value: 100}},
		Attributes: map[string]matchrules.Attribute{
			"mode":  {Type: matchrules.TypeString},
			"plat":  {Type: matchrules.TypeNumber},
			"maps":  {Type: matchrules.TypeStringList, MaxItems: 8},
			"level": {Type: matchrules.TypeNumber},
		},
		Rules: rs}
}

var (
	modeRule  = matchrules.Rule{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}
	mapsRule  = matchrules.Rule{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps"}
	levelRule = matchrules.Rule{Name: "level", Kind: matchrules.RuleDistance, Attribute: "level", Expansions: []matchrules.Step{{AfterS: 0, Value: 5}, {AfterS: 30, Value: 10}}}
	fairRule  = matchrules.Rule{Name: "fair", Kind: matchrules.RuleTeamBalance, Expansions: []matchrules.Step{{AfterS: 0, Value: 20}, {AfterS: 30, Value: 50}}}
)

func mode(m string) map[string]matchrules.Value {
	return map[string]matchrules.Value{"mode": matchrules.StringValue(m)}
}
func maps(m ...string) map[string]matchrules.Value {
	return map[string]matchrules.Value{"maps": matchrules.ListValue(m...)}
}
func level(x float64) map[string]matchrules.Value {
	return map[string]matchrules.Value{"level": matchrules.NumberValue(x)}
}

// waitOf is the Wait of ticket i in res, or a zero Wait.
func waitOf(res matchpool.Result, i int) matchpool.Wait {
	for _, w := range res.Waiting {
		if w.Ticket == i {
			return w
		}
	}
	return matchpool.Wait{}
}

// Each rule kind on small queues: what matches, what waits and on which rule, what the
// match reports. Every pass is also checked against the rules by definition (check).
func TestRulesOfEachKind(t *testing.T) {
	t.Parallel()
	const now = 100.0
	tests := []struct {
		name    string
		cfg     matchrules.Config
		tickets []matchpool.Ticket
		matches [][]int
		attrs   []matchpool.MatchAttribute // of the first match
		waits   map[int]string             // ticket: its Wait's rule and detail, "rule: detail"
	}{
		{
			name:    "equal: one mode across the match",
			cfg:     ruled(1, modeRule),
			tickets: []matchpool.Ticket{with(1000, 10, mode("ranked")), with(1001, 0, mode("casual")), with(1010, 20, mode("ranked"))},
			matches: [][]int{{0, 2}},
			attrs:   []matchpool.MatchAttribute{{Name: "mode", Value: matchrules.StringValue("ranked")}},
			waits:   map[int]string{1: "mode: only 0 candidates with the same mode"},
		},
		{
			name: "equal on numbers",
			cfg:  ruled(1, matchrules.Rule{Name: "platform", Kind: matchrules.RuleEqual, Attribute: "plat"}),
			tickets: []matchpool.Ticket{with(1000, 0, map[string]matchrules.Value{"plat": matchrules.NumberValue(2)}),
				with(1001, 10, map[string]matchrules.Value{"plat": matchrules.NumberValue(1)}), with(1010, 20, map[string]matchrules.Value{"plat": matchrules.NumberValue(2)})},
			matches: [][]int{{0, 2}},
			attrs:   []matchpool.MatchAttribute{{Name: "plat", Value: matchrules.NumberValue(2)}},
		},
		{
			name: "equal: a ticket past optional_after_s is no longer bound",
			cfg:  ruled(1, matchrules.Rule{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode", OptionalAfterS: after(60)}),
			// ticket 0 has waited 100 s: any mode; the match reports the bound one's
			tickets: []matchpool.Ticket{with(1000, 0, mode("ranked")), with(1001, 50, mode("casual"))},
			matches: [][]int{{0, 1}},
			attrs:   []matchpool.MatchAttribute{{Name: "mode", Value: matchrules.StringValue("casual")}},
		},
		{
			name:    "equal: before optional_after_s it binds",
			cfg:     ruled(1, matchrules.Rule{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode", OptionalAfterS: after(120)}),
			tickets: []matchpool.Ticket{with(1000, 0, mode("ranked")), with(1001, 50, mode("casual"))},
			matches: [][]int{},
			waits:   map[int]string{0: "mode: only 0 candidates with the same mode", 1: "mode: only 0 candidates with the same mode"},
		},
		{
			name:    "intersect: the common maps, sorted",
			cfg:     ruled(1, mapsRule),
			tickets: []matchpool.Ticket{with(1000, 0, maps("nuke", "dust", "inferno")), with(1001, 10, maps("inferno", "nuke"))},
			matches: [][]int{{0, 1}},
			attrs:   []matchpool.MatchAttribute{{Name: "maps", Value: matchrules.ListValue("inferno", "nuke")}},
		},
		{
			name:    "intersect: no map in common",
			cfg:     ruled(1, mapsRule),
			tickets: []matchpool.Ticket{with(1000, 0, maps("nuke", "dust")), with(1001, 10, maps("inferno")), with(1002, 20, maps("mirage"))},
			matches: [][]int{},
			waits:   map[int]string{0: "maps: no maps common to 2 candidates"},
		},
		{
			// Pairwise every candidate shares a map with the anchor, but the nearest three
			// have none in common: the search keeps to the tickets that share dust.
			name: "intersect: the whole match shares a map, not just pairs",
			cfg:  ruled(2, mapsRule),
			tickets: []matchpool.Ticket{with(1000, 0, maps("dust", "nuke")), with(1001, 10, maps("nuke")),
				with(1002, 20, maps("dust")), with(1003, 30, maps("nuke", "mirage")), with(1010, 40, maps("dust", "mirage")),
				with(1011, 50, maps("dust"))},
			matches: [][]int{{0, 2, 4, 5}},
			attrs:   []matchpool.MatchAttribute{{Name: "maps", Value: matchrules.ListValue("dust")}},
		},
		{
			name: "intersect: min_common 2",
			cfg:  ruled(1, matchrules.Rule{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps", MinCommon: 2}),
			tickets: []matchpool.Ticket{with(1000, 0, maps("dust", "nuke", "inferno")), with(1001, 10, maps("nuke", "mirage")),
				with(1002, 20, maps("inferno", "dust"))},
			matches: [][]int{{0, 2}},
			attrs:   []matchpool.MatchAttribute{{Name: "maps", Value: matchrules.ListValue("dust", "inferno")}},
		},
		{
			name:    "intersect: a list shorter than min_common never matches while bound",
			cfg:     ruled(1, matchrules.Rule{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps", MinCommon: 2}),
			tickets: []matchpool.Ticket{with(1000, 0, maps("dust")), with(1001, 10, maps("dust", "nuke"))},
			matches: [][]int{},
			waits:   map[int]string{0: "maps: the ticket's maps hold fewer values than the rule's min_common"},
		},
		{
			name:    "distance: within the smaller tolerance",
			cfg:     ruled(1, levelRule),
			tickets: []matchpool.Ticket{with(1000, 0, level(30)), with(1001, 90, level(37)), with(1002, 95, level(34))},
			// ticket 0 waited 100 s (10), the others 10 and 5 s (5): 37 is 7 away, 34 is 4
			matches: [][]int{{0, 2}},
		},
		{
			name:    "distance: both widened",
			cfg:     ruled(1, levelRule),
			tickets: []matchpool.Ticket{with(1000, 0, level(30)), with(1001, 60, level(37))},
			matches: [][]int{{0, 1}},
		},
		{
			// Each candidate is within 5 of the anchor 0, but 29 and 35 are 6 apart: the
			// search keeps to a window of 5 around the anchor's 32 ([30.75, 35.75]) and
			// leaves the nearest in rating, 29, out.
			name: "distance: the spread of the whole match",
			cfg:  ruled(2, levelRule),
			tickets: []matchpool.Ticket{with(1000, 90, level(32)), with(1001, 91, level(29)), with(1002, 92, level(35)),
				with(1003, 93, level(31)), with(1020, 94, level(34))},
			matches: [][]int{{0, 2, 3, 4}},
			waits:   map[int]string{1: "interval: too few players searching in the queue for a match"},
		},
		{
			name:    "distance: no window holds the match",
			cfg:     ruled(2, levelRule),
			tickets: []matchpool.Ticket{with(1000, 90, level(32)), with(1001, 91, level(29)), with(1002, 92, level(35)), with(1003, 93, level(31))},
			matches: [][]int{},
			waits:   map[int]string{0: "level: level too far apart among 3 candidates"},
		},
		{
			// The anchor is past optional_after_s: the rule binds the others only, and the
			// match the window picks for it is judged as a whole, and turned down.
			name: "distance: a match turned down says so",
			cfg: ruled(2, matchrules.Rule{Name: "level", Kind: matchrules.RuleDistance, Attribute: "level", Expansions: []matchrules.Step{{AfterS: 0, Value: 5}},
				OptionalAfterS: after(50)}),
			tickets: []matchpool.Ticket{with(1000, 0, level(32)), with(1001, 91, level(29)), with(1002, 92, level(35)), with(1003, 93, level(31))},
			matches: [][]int{},
			waits:   map[int]string{0: "level: level spread 6 over the tolerance 5 in the match found"},
		},
		{
			name:    "team_balance: averages too far apart",
			cfg:     ruled(1, fairRule),
			tickets: []matchpool.Ticket{with(1000, 90, nil), with(1040, 90, nil)},
			matches: [][]int{},
			waits:   map[int]string{0: "fair: team averages differ by 40, over the tolerance 20 in the match found"},
		},
		{
			name:    "team_balance: widened with the wait",
			cfg:     ruled(1, fairRule),
			tickets: []matchpool.Ticket{with(1000, 0, nil), with(1040, 50, nil)},
			matches: [][]int{{0, 1}},
		},
		{
			// The interval (100) is anchor-centred: without the rule the nearest three,
			// 995, 1020 and 975, would join 1000 (a spread of 45). A distance rule on the
			// reserved rating bounds the whole match's spread (40): 1030 is taken instead.
			name: "distance on the rating: the spread of the whole match",
			cfg: ruled(2, matchrules.Rule{Name: "spread", Kind: matchrules.RuleDistance, Attribute: matchrules.RatingAttribute,
				Expansions: []matchrules.Step{{AfterS: 0, Value: 40}}}),
			tickets: []matchpool.Ticket{with(1000, 0, nil), with(975, 1, nil), with(1030, 2, nil), with(1020, 3, nil), with(995, 4, nil)},
			matches: [][]int{{0, 4, 3, 2}},
			waits:   map[int]string{1: "interval: too few players searching in the queue for a match"},
		},
		{
			name:    "the same queue without the rule",
			cfg:     ruled(2),
			tickets: []matchpool.Ticket{with(1000, 0, nil), with(975, 1, nil), with(1030, 2, nil), with(1020, 3, nil), with(995, 4, nil)},
			matches: [][]int{{0, 4, 3, 1}},
		},
		{
			name:    "built-in: the interval",
			cfg:     ruled(1),
			tickets: []matchpool.Ticket{solo(1000, 0), solo(1200, 0)},
			matches: [][]int{},
			waits:   map[int]string{0: "interval: no candidate within the interval", 1: "interval: no candidate within the interval"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, tt.tickets, now, tt.cfg)
			if got := matchedTickets(res); !reflect.DeepEqual(got, tt.matches) {
				t.Fatalf("matches %v, want %v; waiting %+v", got, tt.matches, res.Waiting)
			}
			if tt.attrs != nil && !reflect.DeepEqual(res.Matches[0].Attributes, tt.attrs) {
				t.Fatalf("attributes %+v, want %+v", res.Matches[0].Attributes, tt.attrs)
			}
			for i, want := range tt.waits {
				w := waitOf(res, i)
				if got := w.Rule + ": " + w.Detail(); got != want {
					t.Errorf("ticket %d waits on %q, want %q", i, got, want)
				}
			}
		})
	}
}

// Rules apply with latency: the regions and the rules' classes together.
func TestRulesWithRegions(t *testing.T) {
	t.Parallel()
	cfg := ruled(1, mapsRule)
	cfg.MaxLatency = []matchrules.Step{{AfterS: 0, Value: 50}}
	eu, us := []matchpool.RegionLatency{{Region: "eu", MS: 20}, {Region: "us", MS: 90}}, []matchpool.RegionLatency{{Region: "eu", MS: 90}, {Region: "us", MS: 20}}
	both := []matchpool.RegionLatency{{Region: "eu", MS: 30}, {Region: "us", MS: 30}}
	tk := []matchpool.Ticket{with(1000, 0, maps("dust", "nuke")), with(1001, 10, maps("dust")), with(1002, 20, maps("nuke"))}
	tk[0].Latencies, tk[1].Latencies, tk[2].Latencies = both, us, eu
	res := run(t, tk, 100, cfg)
	if got := matchedTickets(res); !reflect.DeepEqual(got, [][]int{{0, 1}}) || res.Matches[0].Region != "us" {
		t.Fatalf("matches %v in %q, want [[0 1]] in us", got, res.Matches[0].Region)
	}
}

// A queue without rules reports no attributes, and its matches are those of before (the
// other tests of this package, unchanged, say so); a match of rules without equal or
// intersect reports none either.
func TestAttributesOnlyFromEqualAndIntersect(t *testing.T) {
	t.Parallel()
	res := run(t, []matchpool.Ticket{with(1000, 0, level(3)), with(1001, 0, level(4))}, 100, ruled(1, levelRule))
	if len(res.Matches) != 1 || res.Matches[0].Attributes != nil {
		t.Fatalf("%+v", res.Matches)
	}
}

// The search keeps an anchor's first MaxClasses classes: an anchor no longer bound by an
// intersect rule is searched in one class per value the live tickets list, and a match
// whose only common value is the 65th (in byte order) is not found.
func TestClassesBeyondTheLimitAreNotSearched(t *testing.T) {
	t.Parallel()
	cfg := ruled(2, matchrules.Rule{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps", OptionalAfterS: after(50)})
	for _, c := range []struct {
		value string
		match bool
	}{{"v062", true}, {"v063", false}} { // "none" is the first value, v062 the 64th
		tk := []matchpool.Ticket{with(1000, 0, maps("none"))} // waited 100 s: not bound
		for range 3 {
			tk = append(tk, with(1000, 90, maps(c.value)))
		}
		for i := range 70 { // far away in rating: they only make the values
			tk = append(tk, with(5000, 90, maps(fmt.Sprintf("v%03d", i))))
		}
		res := run(t, tk, 100, cfg)
		if got := len(res.Matches) > 0 && res.Matches[0].Tickets[0] == 0; got != c.match {
			t.Fatalf("value %s: matched %v, want %v", c.value, got, c.match)
		}
	}
}

// Config.Validate names every fault of attributes and rules.
func TestRulesConfigValidation(t *testing.T) {
	t.Parallel()
	good := ruled(5, modeRule, mapsRule, levelRule, fairRule)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(c *matchrules.Config)
		field  string
	}{
		{"an undeclared attribute", func(c *matchrules.Config) { c.Rules[0].Attribute = "map" }, "rules[0].attribute"},
		{"no attribute", func(c *matchrules.Config) { c.Rules[1].Attribute = "" }, "rules[1].attribute"},
		{"an attribute of the wrong type", func(c *matchrules.Config) { c.Rules[1].Attribute = "mode" }, "rules[1].attribute"},
		{"an attribute for team_balance", func(c *matchrules.Config) { c.Rules[3].Attribute = "level" }, "rules[3].attribute"},
		{"an unknown kind", func(c *matchrules.Config) { c.Rules[0].Kind = "same" }, "rules[0].type"},
		{"a duplicate name", func(c *matchrules.Config) { c.Rules[1].Name = "mode" }, "rules[1].name"},
		{"a reserved name", func(c *matchrules.Config) { c.Rules[0].Name = "interval" }, "rules[0].name"},
		{"the reserved attribute declared", func(c *matchrules.Config) { c.Attributes["rating"] = matchrules.Attribute{Type: matchrules.TypeNumber} }, "attributes.rating"},
		{"the reserved attribute for equal", func(c *matchrules.Config) { c.Rules[0].Attribute = "rating" }, "rules[0].attribute"},
		{"no name", func(c *matchrules.Config) { c.Rules[0].Name = "" }, "rules[0].name"},
		{"expansions out of order", func(c *matchrules.Config) {
			c.Rules[2].Expansions = []matchrules.Step{{AfterS: 0, Value: 5}, {AfterS: 30, Value: 10}, {AfterS: 20, Value: 20}}
		}, "rules[2].expansions[2].after_s"},
		{"expansions narrowing", func(c *matchrules.Config) {
			c.Rules[3].Expansions = []matchrules.Step{{AfterS: 0, Value: 20}, {AfterS: 30, Value: 10}}
		}, "rules[3].expansions[1].value"},
		{"no expansions for distance", func(c *matchrules.Config) { c.Rules[2].Expansions = nil }, "rules[2].expansions"},
		{"expansions for equal", func(c *matchrules.Config) { c.Rules[0].Expansions = []matchrules.Step{{AfterS: 0, Value: 1}} }, "rules[0].expansions"},
		{"min_common for equal", func(c *matchrules.Config) { c.Rules[0].MinCommon = 2 }, "rules[0].min_common"},
		{"min_common negative", func(c *matchrules.Config) { c.Rules[1].MinCommon = -1 }, "rules[1].min_common"},
		{"optional_after_s 0", func(c *matchrules.Config) { c.Rules[0].OptionalAfterS = after(0) }, "rules[0].optional_after_s"},
		{"an unknown attribute type", func(c *matchrules.Config) { c.Attributes["mode"] = matchrules.Attribute{Type: "text"} }, "attributes.mode.type"},
		{"max_items on a string", func(c *matchrules.Config) {
			c.Attributes["mode"] = matchrules.Attribute{Type: matchrules.TypeString, MaxItems: 3}
		}, "attributes.mode.max_items"},
		{"a default of the wrong type", func(c *matchrules.Config) {
			v := matchrules.NumberValue(1)
			c.Attributes["mode"] = matchrules.Attribute{Type: matchrules.TypeString, Default: &v}
		}, "attributes.mode.default"},
		{"a default over max_items", func(c *matchrules.Config) {
			v := matchrules.ListValue("a", "b")
			c.Attributes["maps"] = matchrules.Attribute{Type: matchrules.TypeStringList, MaxItems: 1, Default: &v}
		}, "attributes.maps.default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ruled(5, modeRule, mapsRule, levelRule, fairRule)
			c.Rules = slices.Clone(c.Rules)
			tt.change(&c)
			assertFields(t, c.Validate(), tt.field)
			if _, err := Run(nil, 0, c); !hasField(err, tt.field) {
				t.Fatalf("Run: %v, want a fault of %s", err, tt.field)
			}
		})
	}
}

// ValidateTicket and Run name every fault of a ticket's attributes.
func TestTicketAttributesValidation(t *testing.T) {
	t.Parallel()
	cfg := ruled(2, modeRule, mapsRule)
	d := matchrules.StringValue("casual")
	cfg.Attributes["mode"] = matchrules.Attribute{Type: matchrules.TypeString, Default: &d}
	cfg.Attributes["maps"] = matchrules.Attribute{Type: matchrules.TypeStringList, MaxItems: 2}
	good := map[string]matchrules.Value{"mode": matchrules.StringValue("ranked"), "maps": matchrules.ListValue("dust")}
	tests := []struct {
		name  string
		attrs map[string]matchrules.Value
		field string
	}{
		{"undeclared", map[string]matchrules.Value{"maps": matchrules.ListValue("dust"), "map": matchrules.StringValue("x")}, "attributes.map"},
		{"wrong type", map[string]matchrules.Value{"maps": matchrules.StringValue("dust")}, "attributes.maps"},
		{"a number of the wrong type", map[string]matchrules.Value{"maps": matchrules.ListValue("dust"), "level": matchrules.StringValue("3")}, "attributes.level"},
		{"too many values", map[string]matchrules.Value{"maps": matchrules.ListValue("dust", "nuke", "mirage")}, "attributes.maps"},
		{"a value repeated", map[string]matchrules.Value{"maps": matchrules.ListValue("dust", "dust")}, "attributes.maps[1]"},
		{"an empty value", map[string]matchrules.Value{"maps": matchrules.ListValue("")}, "attributes.maps[0]"},
		{"required and missing", map[string]matchrules.Value{"mode": matchrules.StringValue("ranked")}, "attributes.maps"},
		{"a number not finite", map[string]matchrules.Value{"maps": matchrules.ListValue("dust"), "level": matchrules.NumberValue(math.NaN())}, "attributes.level"},
	}
	if err := ValidateTicket(cfg, with(1000, 0, good)); err != nil {
		t.Fatal(err)
	}
	if err := ValidateTicket(cfg, with(1000, 0, maps("dust"))); err != nil {
		t.Fatalf("the mode has a default: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assertFields(t, ValidateTicket(cfg, with(1000, 0, tt.attrs)), tt.field)
			tk := []matchpool.Ticket{with(1000, 0, good), with(1000, 0, tt.attrs)}
			if _, err := Run(tk, 10, cfg); !hasField(err, "tickets[1]."+tt.field) {
				t.Fatalf("Run: %v, want a fault of tickets[1].%s", err, tt.field)
			}
			shaped := cfg // the shaped pass checks the attributes its own way (attributeChecker)
			shaped.Shape = testqueue.Symmetric(2, 2)
			if _, err := Run(tk, 10, shaped); !hasField(err, "tickets[1]."+tt.field) {
				t.Fatalf("Run, shaped: %v, want a fault of tickets[1].%s", err, tt.field)
			}
			tk[1].ExpiresAt = 0 // expired tickets are checked too
			if _, err := Run(tk, 10, cfg); !hasField(err, "tickets[1]."+tt.field) {
				t.Fatalf("Run, expired: %v, want a fault of tickets[1].%s", err, tt.field)
			}
		})
	}
	// Attributes without a declaration are refused by a queue without any.
	assertFields(t, ValidateTicket(matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 1}}}, with(1000, 0, mode("x"))), "attributes.mode")
}

func hasField(err error, field string) bool {
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.Invalid {
		return false
	}
	return slices.ContainsFunc(e.Fields, func(f apperr.FieldError) bool { return f.Field == field })
}

func assertFields(t *testing.T, err error, field string) {
	t.Helper()
	if !hasField(err, field) {
		t.Fatalf("error %v, want an Invalid fault of %s", err, field)
	}
}
