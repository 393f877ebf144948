// Package testqueue makes the queues the tick's tests and benchmarks run: the issue's
// benchmark queues (20% parties, ratings sd 200, waits over a minute; with regions, rules,
// backfills, shapes and roles) and random small queues drawn so that each rule bites. Each
// is a function of its seed: a seed makes one queue.
package testqueue

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Regions are the regions of the latency benchmarks.
var Regions = []string{"ap-south", "eu-west", "us-east", "us-west"}

// BenchQueue is the queue: n searching tickets, 80% solo and 20%
// parties of 2-5 (uniform); ratings thesis-like, normal around 1000 with sd 200 (a party's
// players around its own level, sd 50); waits spread uniformly over 0..60 s so that the
// expansion steps differ; no ticket expires. With regions, every ticket has latencies to
// the four: 20-60 ms to its home region, 40-200 ms to the others.
func BenchQueue(seed uint64, n int, regions bool) ([]matchpool.Ticket, float64) {
	rng := rand.New(rand.NewPCG(seed, 0xbe7c4))
	const now = 1000.0
	// Arrival order, the oldest first, as the queue service keeps them (and allocates
	// them: a ticket's slices lie near the previous ticket's).
	since := make([]float64, n)
	for i := range since {
		since[i] = now - 60*rng.Float64()
	}
	slices.Sort(since)
	tk := make([]matchpool.Ticket, n)
	for i := range tk {
		size := 1
		if rng.IntN(5) == 0 {
			size = 2 + rng.IntN(4)
		}
		level := 1000 + 200*rng.NormFloat64()
		r := make([]float64, size)
		for j := range r {
			r[j] = level
			if size > 1 {
				r[j] += 50 * rng.NormFloat64()
			}
		}
		tk[i] = matchpool.Ticket{Ratings: r, WaitingSince: since[i], ExpiresAt: now + 240}
		if regions {
			home := rng.IntN(len(Regions))
			lat := make([]matchpool.RegionLatency, len(Regions))
			for j, name := range Regions {
				lat[j] = matchpool.RegionLatency{Region: name, MS: 40 + 160*rng.Float64()}
				if j == home {
					lat[j].MS = 20 + 40*rng.Float64()
				}
			}
			tk[i].Latencies = lat
		}
	}
	return tk, now
}

// BenchConfig is DESIGN's example queue: 5v5, interval 25 widening to 50 after 10 s and
// 150 after 30 s; with regions, 60 ms widening to 120 ms after 20 s.
func BenchConfig(strategy string, regions bool) matchrules.Config {
	c := matchrules.Config{TeamSize: 5, Strategy: strategy,
		Interval: []matchrules.Step{{AfterS: 0, Value: 25}, {AfterS: 10, Value: 50}, {AfterS: 30, Value: 150}}}
	if regions {
		c.MaxLatency = []matchrules.Step{{AfterS: 0, Value: 60}, {AfterS: 20, Value: 120}}
	}
	return c
}

// BenchBackfills adds to the queue n backfill tickets, in arrival order among the
// others: 5v5 matches that lost one to three players (a random team each, sometimes both),
// their players rated like the queue's, half of them with bots and the server's bot rule,
// with regions a home region each.
func BenchBackfills(tk []matchpool.Ticket, seed uint64, n int, regions bool) []matchpool.Ticket {
	rng := rand.New(rand.NewPCG(seed, 0xbacf))
	out := make([]matchpool.Ticket, 0, len(tk)+n)
	every := len(tk) / n
	for i, t := range tk {
		out = append(out, t)
		if i%every != every-1 || len(out) >= len(tk)+n {
			continue
		}
		b := &matchpool.Backfill{}
		lost := 1 + rng.IntN(3)
		for k := range 2 {
			for range 5 {
				b.Teams[k].Players = append(b.Teams[k].Players, max(0, 1000+200*rng.NormFloat64()))
			}
		}
		for range lost {
			k := rng.IntN(2)
			if len(b.Teams[k].Players) > 0 {
				b.Teams[k].Players = b.Teams[k].Players[1:]
				b.OpenSlots[k]++
			}
		}
		if rng.IntN(2) == 0 {
			b.Bots = &teams.BotRule{MeanWeight: 1000, TargetPlayers: 10, RecommendedMin: 8, RecommendedMax: 12}
			for k := range 2 {
				for range b.OpenSlots[k] {
					b.Teams[k].Bots = append(b.Teams[k].Bots, 900+200*rng.Float64())
				}
			}
		}
		x := matchpool.Ticket{WaitingSince: t.WaitingSince, ExpiresAt: t.ExpiresAt, Backfill: b}
		if regions {
			x.Latencies = []matchpool.RegionLatency{{Region: Regions[rng.IntN(len(Regions))]}}
		}
		out = append(out, x)
	}
	return out
}

// BenchRuled is the queue with attributes: every ticket plays one of 4 modes
// and lists 3 of 8 maps, uniformly.
func BenchRuled(seed uint64, n int) ([]matchpool.Ticket, float64, matchrules.Config) {
	tk, now := BenchQueue(seed, n, false)
	rng := rand.New(rand.NewPCG(seed, 0x7a1e5))
	modes := []string{"casual", "competitive", "ranked", "tournament"}
	maps := []string{"ancient", "anubis", "dust", "inferno", "mirage", "nuke", "overpass", "vertigo"}
	for i := range tk {
		list := make([]string, 3)
		for j, k := range rng.Perm(len(maps))[:3] {
			list[j] = maps[k]
		}
		tk[i].Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue(modes[rng.IntN(len(modes))]), "maps": matchrules.ListValue(list...)}
	}
	cfg := BenchConfig(matchrules.RatingWindow, false)
	cfg.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString}, "maps": {Type: matchrules.TypeStringList, MaxItems: 8}}
	cfg.Rules = []matchrules.Rule{
		{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"},
		{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps"},
	}
	return tk, now, cfg
}

// BenchShaped is the queue (BenchQueue) with its parties cut to at most
// maxParty players: a free-for-all takes solos only, a 30 x 3 parties of up to 3.
func BenchShaped(seed uint64, n, maxParty int) ([]matchpool.Ticket, float64) {
	tk, now := BenchQueue(seed, n, false)
	for i := range tk {
		tk[i].Ratings = tk[i].Ratings[:min(len(tk[i].Ratings), maxParty)]
	}
	return tk, now
}

// BenchRoles is the rules benchmark's queue (4 modes, 3 of 8 maps) at n tickets, 5v5
// with a 1 tank / 2 healers / 2 dps composition: 20% of the players play tank only, 30%
// healer only, 30% dps only, 20% all three (in their order of preference), so that the
// roles the queue offers are about those its matches need.
func BenchRoles(seed uint64, n int) ([]matchpool.Ticket, float64, matchrules.Config) {
	return rolesQueueOf(seed, n, func(x int) []string {
		switch {
		case x < 2:
			return []string{"tank"}
		case x < 5:
			return []string{"healer"}
		case x < 8:
			return []string{"dps"}
		default:
			return []string{"dps", "healer", "tank"}
		}
	})
}

// BenchDPSHeavy is BenchRoles where players pick as they do in games whose role
// queues wait long for dps: 20% tank only, 20% healer or dps, 40% dps only, 20% any; the
// healers run out and most tickets cannot be matched.
func BenchDPSHeavy(seed uint64, n int) ([]matchpool.Ticket, float64, matchrules.Config) {
	return rolesQueueOf(seed, n, func(x int) []string {
		switch {
		case x < 2:
			return []string{"tank"}
		case x < 4:
			return []string{"healer", "dps"}
		case x < 8:
			return []string{"dps"}
		default:
			return []string{"dps", "tank", "healer"}
		}
	})
}

// rolesQueueOf gives each player the roles pick(a uniform 0..9) lists.
func rolesQueueOf(seed uint64, n int, pick func(x int) []string) ([]matchpool.Ticket, float64, matchrules.Config) {
	tk, now, cfg := BenchRuled(seed, n)
	rng := rand.New(rand.NewPCG(seed, 0x201e5))
	cfg.Roles = []string{"tank", "healer", "dps"}
	comp := map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}, "healer": {Min: 2, Max: 2}, "dps": {Min: 2, Max: 2}}
	cfg.Shape = []matchrules.TeamDef{{Size: 5, Composition: comp}, {Size: 5, Composition: comp}}
	for i := range tk {
		tk[i].Roles = make([][]string, len(tk[i].Ratings))
		// A party whose roles fit no team is refused by the service: its players pick again.
		for try := 0; try == 0 || try < 20 && !cfg.PartyFits(tk[i].Roles); try++ {
			for p := range tk[i].Roles {
				tk[i].Roles[p] = pick(rng.IntN(10))
			}
		}
		if !cfg.PartyFits(tk[i].Roles) {
			tk[i].Roles = nil
		}
	}
	return tk, now, cfg
}

// Random is a small random queue of up to maxTickets tickets and the time of its pass:
// teams of 1-4 (5 in a sixth of the cases), either strategy, an interval by wait and in
// half the cases a latency limit, parties in a third of the tickets, ratings near 1000 (or
// ties on a grid), some clocks ahead of the pass's and some tickets expired, in arrival
// order or shuffled.
func Random(rng *rand.Rand, maxTickets int) ([]matchpool.Ticket, float64, matchrules.Config) {
	cfg := matchrules.Config{TeamSize: 1 + rng.IntN(4), Strategy: matchrules.RatingWindow}
	if rng.IntN(6) == 0 {
		cfg.TeamSize = 5
	}
	if rng.IntN(2) == 0 {
		cfg.Strategy = matchrules.GreedyPairs
	}
	now := float64(rng.IntN(100))
	steps := func(scale float64) []matchrules.Step { return randomSteps(rng, scale, 4) }
	cfg.Interval = steps(10)
	regions := []string{"asia", "eu", "us"}[:rng.IntN(4)]
	latency := rng.IntN(2) == 0
	if latency {
		cfg.MaxLatency = steps(40)
	}
	ties := rng.IntN(2) == 0
	n := rng.IntN(maxTickets + 1)
	tk := make([]matchpool.Ticket, n)
	for i := range tk {
		size := 1
		if rng.IntN(3) == 0 {
			size = 1 + rng.IntN(cfg.TeamSize)
		}
		for range size {
			r := 1000 + 40*rng.NormFloat64()
			if ties {
				r = float64(990 + 5*rng.IntN(5))
			}
			tk[i].Ratings = append(tk[i].Ratings, r)
		}
		tk[i].WaitingSince = now - float64(rng.IntN(60))
		if rng.IntN(8) == 0 {
			tk[i].WaitingSince = now + 1 // a clock ahead of the caller's
		}
		tk[i].ExpiresAt = math.Inf(1)
		if rng.IntN(6) == 0 {
			tk[i].ExpiresAt = now + float64(rng.IntN(3)-1) // expired before, at or after now
		}
		if latency && rng.IntN(4) != 0 {
			for _, r := range regions {
				if rng.IntN(4) != 0 {
					tk[i].Latencies = append(tk[i].Latencies, matchpool.RegionLatency{Region: r, MS: float64(10 * rng.IntN(15))})
				}
			}
		}
	}
	if rng.IntN(3) == 0 { // arrival order; otherwise shuffled
		slices.SortStableFunc(tk, func(a, b matchpool.Ticket) int { return cmp.Compare(a.WaitingSince, b.WaitingSince) })
	}
	return tk, now, cfg
}

// WithBackfills adds 1-3 backfill tickets to a random queue: matches of 1..2t-1 players
// rated around the queue's ratings, open slots up to each team's size, in half the cases a
// region (one the tickets know, or not), in a third a bot rule with bots.
func WithBackfills(rng *rand.Rand, tk []matchpool.Ticket, now float64, cfg matchrules.Config) []matchpool.Ticket {
	t := cfg.TeamSize
	for range 1 + rng.IntN(3) {
		b := &matchpool.Backfill{}
		for k := range 2 {
			for range rng.IntN(t + 1) {
				b.Teams[k].Players = append(b.Teams[k].Players, float64(960+10*rng.IntN(9)))
			}
		}
		switch len(b.Teams[0].Players) + len(b.Teams[1].Players) {
		case 0:
			b.Teams[0].Players = []float64{1000}
		case 2 * t:
			b.Teams[1].Players = b.Teams[1].Players[1:]
		}
		for k := range 2 {
			b.OpenSlots[k] = rng.IntN(t - len(b.Teams[k].Players) + 1)
		}
		if b.OpenSlots[0]+b.OpenSlots[1] == 0 {
			k := 0
			if len(b.Teams[0].Players) == t {
				k = 1
			}
			b.OpenSlots[k] = 1
		}
		if rng.IntN(3) == 0 {
			b.Bots = &BotRule
			for k := range 2 {
				for range rng.IntN(3) {
					b.Teams[k].Bots = append(b.Teams[k].Bots, float64(900+50*rng.IntN(4)))
				}
			}
		}
		x := matchpool.Ticket{WaitingSince: now - float64(rng.IntN(60)), ExpiresAt: math.Inf(1), Backfill: b}
		if rng.IntN(8) == 0 {
			x.ExpiresAt = now
		}
		if rng.IntN(2) == 0 {
			x.Latencies = []matchpool.RegionLatency{{Region: []string{"asia", "eu", "us", "mars"}[rng.IntN(4)], MS: 0}}
		}
		at := rng.IntN(len(tk) + 1)
		tk = slices.Insert(tk, at, x)
	}
	return tk
}

// BotRule keeps 4 players a team at most (and at least the largest team).
var BotRule = teams.BotRule{MeanWeight: 950, TargetPlayers: 8, RecommendedMin: 2, RecommendedMax: 8}

// WithRules gives a random queue attributes and rules drawn so that each rule bites: a
// mode (equal on a string, 2 values, 3 in a third of the cases), a platform (equal on a number), maps (intersect,
// lists of 0-3 of 5 maps, min_common 1 or 2), a level (distance, 0..20), a team balance
// and the spread of the ratings (distance on the reserved rating), each rule present in 2 cases of 5, with optional_after_s in a third of them;
// a default in some declarations, and then some tickets without the attribute.
func WithRules(rng *rand.Rand, tk []matchpool.Ticket, cfg matchrules.Config) ([]matchpool.Ticket, matchrules.Config) {
	cfg.Attributes = map[string]matchrules.Attribute{
		"mode":  {Type: matchrules.TypeString},
		"plat":  {Type: matchrules.TypeNumber},
		"maps":  {Type: matchrules.TypeStringList, MaxItems: 3},
		"level": {Type: matchrules.TypeNumber},
	}
	defaults := map[string]matchrules.Value{"mode": matchrules.StringValue("a"), "plat": matchrules.NumberValue(1), "maps": matchrules.ListValue("m1"), "level": matchrules.NumberValue(10)}
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
	steps := func(scale float64) []matchrules.Step { return randomSteps(rng, scale, 3) }
	all := []matchrules.Rule{
		{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode", OptionalAfterS: optional()},
		{Name: "platform", Kind: matchrules.RuleEqual, Attribute: "plat", OptionalAfterS: optional()},
		{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps", MinCommon: 1 + rng.IntN(2), OptionalAfterS: optional()},
		{Name: "level", Kind: matchrules.RuleDistance, Attribute: "level", Expansions: steps(3), OptionalAfterS: optional()},
		{Name: "fair", Kind: matchrules.RuleTeamBalance, Expansions: steps(15), OptionalAfterS: optional()},
		{Name: "spread", Kind: matchrules.RuleDistance, Attribute: matchrules.RatingAttribute, Expansions: steps(20), OptionalAfterS: optional()},
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
		attrs := map[string]matchrules.Value{
			"mode":  matchrules.StringValue(modes[rng.IntN(len(modes))]),
			"plat":  matchrules.NumberValue(float64(1 + rng.IntN(2))),
			"level": matchrules.NumberValue(float64(rng.IntN(21))),
		}
		var list []string
		for _, j := range rng.Perm(len(maps))[:rng.IntN(4)] {
			list = append(list, maps[j])
		}
		attrs["maps"] = matchrules.ListValue(list...)
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

// RandomShaped is a small random queue (3-6 tickets) of a team shape, its pass at 60 s:
// three teams of one, 2v2, a monster against three hunters, three teams of two, or
// compositions of roles; minimum sizes in a third of the cases, parties of two, the rules
// of WithRules, and party_mix in a quarter.
func RandomShaped(rng *rand.Rand) ([]matchpool.Ticket, matchrules.Config) {
	cfg := matchrules.Config{Interval: []matchrules.Step{{AfterS: 0, Value: float64(10 * rng.IntN(6))}, {AfterS: 30, Value: 100}}}
	if rng.IntN(2) == 0 {
		cfg.Interval = cfg.Interval[:1]
	}
	roles := []string{"tank", "dps", "healer"}
	switch rng.IntN(6) {
	case 0:
		cfg.Shape = Symmetric(3, 1)
	case 1:
		cfg.Shape = Symmetric(2, 2)
	case 2:
		cfg.Shape = []matchrules.TeamDef{{Name: "monster", Size: 1}, {Name: "hunters", Size: 3}}
	case 3:
		cfg.Shape = Symmetric(3, 2)
	case 4:
		cfg.Roles = roles[:2]
		comp := map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}
		cfg.Shape = []matchrules.TeamDef{{Size: 2, Composition: comp}, {Size: 2, Composition: comp}}
	case 5:
		cfg.Roles = roles
		comp := map[string]matchrules.RoleRange{"tank": {Min: 0, Max: 1}, "healer": {Min: 1, Max: 1}}
		cfg.Shape = []matchrules.TeamDef{{Size: 3, Composition: comp}, {Size: 2, Composition: map[string]matchrules.RoleRange{"dps": {Min: 1, Max: 2}}}}
	}
	if rng.IntN(3) == 0 {
		for k := range cfg.Shape {
			if d := &cfg.Shape[k]; d.Size > 1 {
				d.MinSize = []matchrules.Step{{AfterS: 0, Value: float64(d.Size)}, {AfterS: float64(10 + rng.IntN(60)), Value: float64(d.Size - 1)}}
			}
		}
	}
	largest := 0
	for _, d := range cfg.Shape {
		largest = max(largest, d.Size)
	}
	cfg.TeamSize = largest
	n := 3 + rng.IntN(4)
	tk := make([]matchpool.Ticket, n)
	for i := range tk {
		size := 1
		if largest > 1 && rng.IntN(4) == 0 {
			size = 2
		}
		x := matchpool.Ticket{WaitingSince: float64(rng.IntN(60)), ExpiresAt: math.Inf(1)}
		for range size {
			x.Ratings = append(x.Ratings, float64(rng.IntN(60)))
			if len(cfg.Roles) > 0 {
				var rs []string
				for _, r := range cfg.Roles {
					if rng.IntN(2) == 0 {
						rs = append(rs, r)
					}
				}
				x.Roles = append(x.Roles, rs)
			}
		}
		if len(x.Roles) > 1 && !cfg.PartyFits(x.Roles) {
			x.Roles = nil // the service refuses such a party (TestShapedTicketValidation)
		}
		tk[i] = x
	}
	tk, cfg = WithRules(rng, tk, cfg)
	if rng.IntN(4) == 0 {
		cfg.Rules = append(cfg.Rules, matchrules.Rule{Name: "premades", Kind: matchrules.RulePartyMix, MaxDifference: rng.IntN(2)})
	}
	return tk, cfg
}

// Symmetric is a shape of teams unnamed teams of size players.
func Symmetric(teams, size int) []matchrules.TeamDef {
	out := make([]matchrules.TeamDef, teams)
	for i := range out {
		out[i] = matchrules.TeamDef{Size: size}
	}
	return out
}

// randomSteps is an expansion of 1-3 steps, each a 1-20 s after the last and scale times
// 0..grows-1 higher.
func randomSteps(rng *rand.Rand, scale float64, grows int) []matchrules.Step {
	s := []matchrules.Step{{AfterS: 0, Value: scale * float64(rng.IntN(grows))}}
	for range rng.IntN(3) {
		last := s[len(s)-1]
		s = append(s, matchrules.Step{AfterS: last.AfterS + float64(1+rng.IntN(20)), Value: last.Value + scale*float64(rng.IntN(grows))})
	}
	return s
}
