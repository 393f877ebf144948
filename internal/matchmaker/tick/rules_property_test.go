package tick

import (
	"math/rand/v2"
	"testing"
)

// withRules gives a random queue attributes and rules drawn so that each rule bites: a
// mode (equal on a string, 2 values, 3 in a third of the cases), a platform (equal on a number), maps (intersect,
// lists of 0-3 of 5 maps, min_common 1 or 2), a level (distance, 0..20), a team balance
// and the spread of the ratings (distance on the reserved rating), each rule present in 2 cases of 5, with optional_after_s in a third of them;
// a default in some declarations, and then some tickets without the attribute.
func withRules(rng *rand.Rand, tk []Ticket, cfg Config) ([]Ticket, Config) {
	cfg.Attributes = map[string]Attribute{
		"mode":  {Type: TypeString},
		"plat":  {Type: TypeNumber},
		"maps":  {Type: TypeStringList, MaxItems: 3},
		"level": {Type: TypeNumber},
	}
	defaults := map[string]Value{"mode": StringValue("a"), "plat": NumberValue(1), "maps": ListValue("m1"), "level": NumberValue(10)}
	for _, name := range []string{"level", "maps", "mode", "plat"} { // not the map's order: a seed makes one queue
		if v := defaults[name]; rng.IntN(3) == 0 {
			a := cfg.Attributes[name]
			a.Default = &v
			cfg.Attributes[name] = a
		}
	}
	optional := func() *float64 {
		if rng.IntN(3) != 0 {
			return nil
		}
		x := float64(5 + rng.IntN(40))
		return &x
	}
	steps := func(scale float64) []Step {
		s := []Step{{0, scale * float64(rng.IntN(3))}}
		for range rng.IntN(3) {
			last := s[len(s)-1]
			s = append(s, Step{last.AfterS + float64(1+rng.IntN(20)), last.Value + scale*float64(rng.IntN(3))})
		}
		return s
	}
	all := []Rule{
		{Name: "mode", Kind: RuleEqual, Attribute: "mode", OptionalAfterS: optional()},
		{Name: "platform", Kind: RuleEqual, Attribute: "plat", OptionalAfterS: optional()},
		{Name: "maps", Kind: RuleIntersect, Attribute: "maps", MinCommon: 1 + rng.IntN(2), OptionalAfterS: optional()},
		{Name: "level", Kind: RuleDistance, Attribute: "level", Expansions: steps(3), OptionalAfterS: optional()},
		{Name: "fair", Kind: RuleTeamBalance, Expansions: steps(15), OptionalAfterS: optional()},
		{Name: "spread", Kind: RuleDistance, Attribute: RatingAttribute, Expansions: steps(20), OptionalAfterS: optional()},
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for _, r := range all {
		if rng.IntN(5) < 2 {
			cfg.Rules = append(cfg.Rules, r)
		}
	}
	modes := []string{"a", "b", "c"}[:2+rng.IntN(3)/2]
	maps := []string{"m1", "m2", "m3", "m4", "m5"}
	for i := range tk {
		attrs := map[string]Value{
			"mode":  StringValue(modes[rng.IntN(len(modes))]),
			"plat":  NumberValue(float64(1 + rng.IntN(2))),
			"level": NumberValue(float64(rng.IntN(21))),
		}
		var list []string
		for _, j := range rng.Perm(len(maps))[:rng.IntN(4)] {
			list = append(list, maps[j])
		}
		attrs["maps"] = ListValue(list...)
		for _, name := range []string{"level", "maps", "mode", "plat"} { // in this order: a seed makes one queue
			// A backfill ticket gives what its match agreed on, some of it; a ticket may
			// leave out what has a default.
			if tk[i].Backfill != nil && rng.IntN(2) == 0 || cfg.Attributes[name].Default != nil && rng.IntN(3) == 0 {
				delete(attrs, name)
			}
		}
		tk[i].Attributes = attrs
	}
	return tk, cfg
}

// Random small queues with rules keep every rule check knows (no match breaks a rule, the
// oldest is not skipped, Waiting is the tickets left) and agree with the reference, with
// both strategies, latency, parties and backfills. Without the rules' checks in the pass,
// the rules are broken in most cases (see TestIgnoringARuleIsCaught).
func TestRandomRuledQueuesKeepTheRulesAndMatchTheReference(t *testing.T) {
	t.Parallel()
	cases := 4000
	if testing.Short() {
		cases = 600
	}
	var matches, waits, turnedDown, fills int
	for seed := range uint64(cases) {
		rng := rand.New(rand.NewPCG(seed, 0x4a1e5))
		tk, now, cfg := randomQueue(rng, 11)
		if rng.IntN(3) == 0 {
			tk = withBackfills(rng, tk, now, cfg)
		}
		tk, cfg = withRules(rng, tk, cfg)
		if err := againstTheReference(tk, now, cfg); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		res, _ := Run(tk, now, cfg)
		matches += len(res.Matches)
		fills += len(res.Fills)
		for _, x := range res.Waiting {
			if x.Rule != WaitInterval && x.Rule != WaitLatency {
				waits++
			}
			if x.Found {
				turnedDown++
			}
		}
	}
	if matches < cases/4 || waits < cases/4 || turnedDown < cases/50 || fills < cases/10 {
		t.Fatalf("%d matches, %d fills, %d tickets waiting on a rule, %d on a match turned down in %d cases: the test hardly tests",
			matches, fills, waits, turnedDown, cases)
	}
	t.Logf("%d matches, %d fills, %d tickets waiting on a rule, %d on a match turned down, in %d cases",
		matches, fills, waits, turnedDown, cases)
}
