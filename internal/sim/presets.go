package sim

import (
	"fmt"
	"math"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Preset returns a built-in scenario:
//
//   - "thesis": the thesis's test (Tables 8.3 and 8.4), repeated: 500 players of uniform
//     stats queue at once, are drained into 50 matches, play 11 rounds each; the next 500
//     (drawn again from a population of 10,000) queue 10 minutes later. No matchmaking,
//     then the default and the optimised coefficients and the learned rating model, each
//     with the thesis's interval and greedy pairing, once through the pairing adapter
//     ("pairing: ...", the thesis's algorithm) and once through the queue's pass
//     ("tick: ...", what a queue does on the same test).
//   - "live": a queue that runs all day, on the queue's pass: 1 ticket a second on
//     average, twice as many at the evening peak as at the morning trough, parties of 1
//     to 5, tickets expire after 300 s; the rating_window strategy (the queue's default),
//     the interval from 25, 25 wider every 5 s (32 steps, up to 800 after 155 s). A sweep
//     of the widening speed draws the wait-versus-one-sided curve.
//   - "rules": what match rules cost (issue 23): the live preset's arrivals with 20% parties
//     (sizes 2 to 5), every ticket playing one of 4 modes and listing 3 of 8 maps, drawn
//     uniformly; the same queue (the learned rating, the live preset's widening) without
//     rules, with a mode equal rule, with mode and a maps intersect rule, and with the maps
//     rule optional after 60 s; then a role queue (5v5, 1 tank / 2 healers / 2 dps a team;
//     each player plays tank only 20%, healer only 30%, dps only 30%, all three 20% of the
//     time, as the tick package's role benchmark), alone and with mode and maps. Every
//     configuration sees the same arrivals, values and players' roles.
//   - "ready": what a ready check costs (issue 22): the live preset's queue (its arrivals,
//     the learned rating, its widening) without a ready check and with one that each
//     player declines 5%, 10% or 20% of the time.
//   - "parties": how even parties play (issue 36): the live preset's queue (default
//     coefficients, rating_window, its widening), 20,000 matches, with solo tickets only,
//     with its parties (70/18/7/3/2% of tickets of 1..5 players), and with its parties and
//     a team_balance rule of a fiftieth of the interval at every wait.
func Preset(name string) (Scenario, error) {
	sc := Scenario{
		Seed: 1, Matches: 10_000, TickS: 1, MaxDays: 365,
		TeamSize: 5, Rounds: 11, RoundS: 45, RatingModel: ratings.DefaultModel().Name(),
		Population: PopulationConfig{Players: 10_000, Accuracy: Uniform01, ReactionTime: Uniform01,
			Awareness: Uniform01, Movement: Uniform01},
	}
	switch name {
	case "thesis":
		thesisPreset(&sc)
	case "live":
		livePreset(&sc)
	case "rules":
		rulesPreset(&sc)
	case "ready":
		readyPreset(&sc)
	case "parties":
		partiesPreset(&sc)
	default:
		return Scenario{}, fmt.Errorf("unknown preset %q (want thesis, live, rules, ready or parties)", name)
	}
	return sc, sc.Validate()
}

func thesisPreset(sc *Scenario) {
	def, opt := ThesisDefault, ThesisOptimised
	sc.Arrivals = ArrivalConfig{Bursts: []Burst{{AtS: 0, EveryS: 600, Tickets: 500}}}
	sc.Configurations = []Configuration{{Name: "no matchmaking", Matcher: "none"}}
	for _, c := range []Configuration{
		{Name: "thesis default", Coefficients: &def},
		{Name: "thesis optimised", Coefficients: &opt},
		{Name: "learned rating", Rating: "learned"},
	} {
		for _, m := range []string{"pairing", "tick"} {
			cf := c
			cf.Name, cf.Matcher = m+": "+c.Name, m
			sc.Configurations = append(sc.Configurations, cf)
		}
	}
}

// allDay is the queue the live, rules and ready presets share: 20,000 players, 1 ticket a
// second on average peaking in the evening, parties of the given shares of sizes 1 to 5;
// it returns the widening they share.
func allDay(sc *Scenario, partySizes []float64) *Widening {
	sc.Population.Players = 20_000
	sc.Arrivals = ArrivalConfig{RatePerS: 1, DailyAmplitude: 1.0 / 3, PeakHour: 20, PartySizes: partySizes}
	return &Widening{Initial: 25, Step: 25, EverySeconds: 5}
}

func livePreset(sc *Scenario) {
	w := allDay(sc, []float64{70, 18, 7, 3, 2})
	def, opt := ThesisDefault, ThesisOptimised
	rw := matchrules.RatingWindow
	sc.Configurations = []Configuration{
		{Name: "no matchmaking", Matcher: "none", TicketTTLS: 300},
		{Name: "thesis default", Matcher: "tick", Strategy: rw, Coefficients: &def, Widening: w, TicketTTLS: 300},
		{Name: "thesis optimised", Matcher: "tick", Strategy: rw, Coefficients: &opt, Widening: w, TicketTTLS: 300},
		{Name: "learned rating", Matcher: "tick", Strategy: rw, Rating: "learned", Widening: w, TicketTTLS: 300},
	}
	sc.Sweep = []float64{0.25, 0.5, 2, 4, 8}
}

func rulesPreset(sc *Scenario) {
	w := allDay(sc, []float64{80, 8, 6, 4, 2})
	sc.Attributes = map[string]AttributeDist{
		"mode": {Type: matchrules.TypeString, Values: []string{"casual", "ranked", "tdm", "ctf"}},
		"maps": {Type: matchrules.TypeStringList, Choose: 3,
			Values: []string{"ancient", "anubis", "dust", "inferno", "mirage", "nuke", "overpass", "vertigo"}},
	}
	mode := Rule{Name: "mode", Type: matchrules.RuleEqual, Attribute: "mode"}
	maps := Rule{Name: "maps", Type: matchrules.RuleIntersect, Attribute: "maps"}
	optional := maps
	optional.OptionalAfterS = new(60.0)
	sc.Roles = &RoleDist{Names: []string{"tank", "healer", "dps"}, Picks: []RolePick{
		{Roles: []string{"tank"}, Weight: 20}, {Roles: []string{"healer"}, Weight: 30},
		{Roles: []string{"dps"}, Weight: 30}, {Roles: []string{"dps", "healer", "tank"}, Weight: 20}}}
	roles := map[string]RoleRange{"tank": {Min: 1, Max: 1}, "healer": {Min: 2, Max: 2}, "dps": {Min: 2, Max: 2}}
	for _, c := range []struct {
		name  string
		rules []Rule
		comp  map[string]RoleRange
	}{
		{"no rules", nil, nil},
		{"mode", []Rule{mode}, nil},
		{"mode + maps", []Rule{mode, maps}, nil},
		{"mode + maps, maps optional after 60 s", []Rule{mode, optional}, nil},
		{"roles 1/2/2", nil, roles},
		{"mode + maps + roles 1/2/2", []Rule{mode, maps}, roles},
	} {
		sc.Configurations = append(sc.Configurations, Configuration{Name: c.name, Matcher: "tick",
			Strategy: matchrules.RatingWindow, Rating: "learned", Widening: w, TicketTTLS: 300, Rules: c.rules,
			Composition: c.comp})
	}
}

func readyPreset(sc *Scenario) {
	w := allDay(sc, []float64{70, 18, 7, 3, 2})
	for _, rate := range []float64{-1, 0.05, 0.1, 0.2} {
		c := Configuration{Name: "no ready check", Matcher: "tick", Strategy: matchrules.RatingWindow, Rating: "learned",
			Widening: w, TicketTTLS: 300}
		if rate >= 0 {
			c.Name, c.Acceptance = fmt.Sprintf("%g%% decline", 100*rate), &Acceptance{DeclineRate: rate}
		}
		sc.Configurations = append(sc.Configurations, c)
	}
}

func partiesPreset(sc *Scenario) {
	w := allDay(sc, []float64{70, 18, 7, 3, 2})
	sc.Matches = 20_000
	def := ThesisDefault
	queue := Configuration{Matcher: "tick", Strategy: matchrules.RatingWindow, Coefficients: &def, Widening: w, TicketTTLS: 300}
	// A fiftieth of the interval the widening reaches at each of its steps.
	balance := Rule{Name: "balance", Type: matchrules.RuleTeamBalance}
	for _, s := range (Expansion{Widening: *w}).Schedule(math.Inf(1), queue.TicketTTLS) {
		balance.Expansions = append(balance.Expansions, rulesjson.Step{AfterS: s.AfterS, Value: s.Value / 50})
	}
	solos, parties, balanced := queue, queue, queue
	solos.Name, solos.PartySizes = "solos", []float64{1}
	parties.Name = "parties"
	balanced.Name, balanced.Rules = "parties, team_balance a fiftieth of the interval", []Rule{balance}
	sc.Configurations = []Configuration{solos, parties, balanced}
}
