// Package league simulates a league of team matches with hidden true skills, for measuring
// rating models against a known truth. Outcomes are drawn from a logistic truth of the NS2
// model's own form (time-weighted skills with per-side offsets, commanders, a side bias per
// map, an empty slot worth Presence), with late joiners, early leavers and substitutes, skills
// that drift, and optionally a stream of newcomers, teams of uneven size, or fixed teams.
package league

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Config describes a league. Every probability is per slot or per match as named.
type Config struct {
	Seed       uint64
	Players    int    // pool size
	Matches    int    // matches simulated
	TeamSize   int    // players per team in an even match
	GameType   string // context.game_type of every result
	Sides      [2]string
	SkillSD    float64 // true skills ~ N(0, SkillSD^2), in the NS2 model's logit units
	OffsetSD   float64 // true side offsets ~ N(0, OffsetSD^2)
	CommandSD  float64 // true commander skills ~ N(0, CommandSD^2); 0: nobody commands
	Drift      float64 // a player's skill takes a N(0, Drift^2) step after each match
	Maps       int
	SideBias   float64 // Sides[0]'s advantage in logit units on an average map
	MapBiasSD  float64 // per-map deviation of that advantage
	RoundS     float64 // the truth's median round length (its participation weighting)
	Presence   float64 // the truth's B: an average player's worth over an empty slot
	Substitute float64 // probability a starter leaves early
	Replace    float64 // probability a leaver is replaced
	LateStart  float64 // probability a slot's starter joins late
	// Newcomers is the probability that a slot goes to a new player, who takes the place of
	// the pool member it would have gone to for good: a player then plays about 1/Newcomers
	// matches.
	Newcomers float64
	// Uneven is the probability that a match has teams of different sizes: one team one or
	// two players short (4v3, 5v3 in a 4v4 league), or one player over.
	Uneven float64
	// Regulars, when positive, exempts the first Regulars slots of the pool from Newcomers:
	// a core of regulars who play on, among players who come and go.
	Regulars int
	// NewcomerMean and NewcomerSD, when NewcomerSD is positive, draw the newcomers' true
	// skills from N(NewcomerMean, NewcomerSD^2) instead of the pool's N(0, SkillSD^2): real
	// newcomers are weaker than the players they meet, and alike.
	NewcomerMean, NewcomerSD float64
	// Rosters, when positive, splits the pool into that many fixed teams of TeamSize (Players
	// must be Rosters * TeamSize), and every match is between two of them. Newcomers then
	// replaces a roster's player for good, a transfer.
	Rosters int
	// SizeExponent scales the truth's logit by (TeamSize/2)^SizeExponent: 0 is the NS2
	// model's form (the mean of the skills over both teams, whatever the size); 1/2 makes a
	// team's strength grow with its size as a sum of performances does (TrueSkill's model),
	// so that eight strong players beat eight average ones more surely than two beat two.
	SizeExponent float64
	// Smurfs is the probability that a newcomer is a smurf: a strong player on a new account,
	// of true skill SmurfSkill, whose id starts with "s" (the others' with "n").
	Smurfs, SmurfSkill float64
}

// Default is the league the NS2 model's defaults were tuned on: 200 regulars in 5v5 NS2
// matches (marines against aliens, commanders, per-side offsets, substitutes), 6000 matches.
func Default(seed uint64) Config {
	return Config{
		Seed: seed, Players: 200, Matches: 6000, TeamSize: 5, GameType: "ns2", Sides: [2]string{"aliens", "marines"},
		SkillSD: 2, OffsetSD: 0.5, CommandSD: 1, Drift: 0.03,
		Maps: 8, SideBias: 0.25, MapBiasSD: 0.3, RoundS: 1500, Presence: 4,
		Substitute: 0.15, Replace: 0.7, LateStart: 0.05,
	}
}

// Newcomers is a public-server league unlike the one the defaults were tuned on: 4v4 without
// commanders or per-side offsets, a player plays about five matches before leaving for good,
// a third of the matches have uneven teams, and an extra player is worth twice as much.
func Newcomers(seed uint64) Config {
	return Config{
		Seed: seed, Players: 200, Matches: 6000, TeamSize: 4, GameType: "tdm", Sides: [2]string{"blue", "red"},
		SkillSD: 2, Drift: 0.03,
		Maps: 6, SideBias: 0.1, MapBiasSD: 0.2, RoundS: 900, Presence: 8,
		Substitute: 0.1, Replace: 0.5, LateStart: 0.05,
		Newcomers: 0.2, Uneven: 0.35,
	}
}

// Pro is a league of 24 fixed teams of five, as in professional play: the same five play
// together match after match, a team's lineup changes by a transfer now and then, sides
// (blue, red) and maps matter a little, and form drifts.
func Pro(seed uint64) Config {
	return Config{
		Seed: seed, Players: 120, Matches: 6000, TeamSize: 5, GameType: "moba", Sides: [2]string{"blue", "red"},
		SkillSD: 2, Drift: 0.05, Maps: 1, SideBias: 0.2, RoundS: 1800, Presence: 4,
		Substitute: 0.02, Replace: 1, Newcomers: 0.01, Rosters: 24,
	}
}

// Casual is a newcomer-heavy public league of 8v8: a core of 100 regulars among 300 slots
// that go to a new player three times in ten, so that most players play fewer than six
// matches; teams are even, without commanders or side offsets; sides and maps matter a
// little.
func Casual(seed uint64) Config {
	return Config{
		Seed: seed, Players: 400, Matches: 6000, TeamSize: 8, GameType: "casual", Sides: [2]string{"blue", "red"},
		SkillSD: 2, Drift: 0.03,
		Maps: 6, SideBias: 0.1, MapBiasSD: 0.2, RoundS: 900, Presence: 4,
		Substitute: 0.1, Replace: 0.7, LateStart: 0.05,
		Newcomers: 0.3, Regulars: 100, SizeExponent: 1,
	}
}

// Casual4 is Casual in 4v4.
func Casual4(seed uint64) Config {
	cfg := Casual(seed)
	cfg.TeamSize, cfg.Players, cfg.Regulars, cfg.GameType = 4, 200, 50, "casual4"
	return cfg
}

// Names lists the leagues ByName knows.
func Names() []string { return []string{"default", "newcomers", "pro", "casual", "casual4"} }

// ByName returns a named league (Names).
func ByName(name string, seed uint64) (Config, error) {
	switch name {
	case "casual":
		return Casual(seed), nil
	case "casual4":
		return Casual4(seed), nil
	case "default":
		return Default(seed), nil
	case "newcomers":
		return Newcomers(seed), nil
	case "pro":
		return Pro(seed), nil
	}
	return Config{}, fmt.Errorf("unknown league %q (want one of %v)", name, Names())
}

// Match is one simulated result with the truth's probability that team 0 wins.
type Match struct {
	Result ratings.Result
	PTrue  float64
}

type truth struct {
	skill, offset, command float64
	likesCommand           bool
}

// Simulate plays the league. The same Config gives the same matches.
func Simulate(cfg Config) []Match {
	l := newSeason(cfg)
	out := make([]Match, 0, cfg.Matches)
	for len(out) < cfg.Matches {
		out = append(out, l.play(len(out)))
	}
	return out
}

// season is a league being played: its one random stream (every draw in a fixed order, so
// the same Config gives the same matches), the truth of the player holding each pool slot
// now, and each map's side bias.
type season struct {
	cfg       Config
	rng       *rand.Rand
	pool      []truth
	ids       []string // pool slot -> the id of the player holding it now
	newcomers int
	mapBias   []float64
}

func newSeason(cfg Config) *season {
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	l := &season{cfg: cfg, rng: rng, pool: make([]truth, cfg.Players), ids: make([]string, cfg.Players),
		mapBias: make([]float64, cfg.Maps)}
	for i := range l.pool {
		l.pool[i] = truth{rng.NormFloat64() * cfg.SkillSD, rng.NormFloat64() * cfg.OffsetSD,
			rng.NormFloat64() * cfg.CommandSD, rng.Float64() < 0.2}
	}
	for i := range l.ids {
		l.ids[i] = fmt.Sprintf("p%03d", i)
	}
	for i := range l.mapBias {
		l.mapBias[i] = cfg.SideBias + rng.NormFloat64()*cfg.MapBiasSD
	}
	return l
}

// lineups are the players of the match being drawn.
type lineups struct {
	who    map[string]int // id -> pool slot, for lookups only
	played []int          // pool slots in order, for the drift (no map-order randomness)
}

// bench is the pool slots a match's leavers are replaced from, in order.
type bench struct {
	slots []int
	next  int
}

// play draws match number seq: its length, map, team sizes and sides, each team's players,
// then the winner by the truth's probability, and last every player's drift.
func (l *season) play(seq int) Match {
	cfg, rng := l.cfg, l.rng
	dur := 600 + rng.Float64()*1800
	mapIdx := rng.IntN(cfg.Maps)
	perm := rng.Perm(cfg.Players)
	sizes := [2]int{cfg.TeamSize, cfg.TeamSize}
	if cfg.Uneven > 0 && rng.Float64() < cfg.Uneven {
		// One team short by one or two, or over by one.
		sizes[rng.IntN(2)] += []int{-1, -2, 1}[rng.IntN(3)]
	}
	if cfg.Rosters > 0 {
		perm = l.rostersFirst(perm)
	}
	subs := &bench{slots: perm, next: sizes[0] + sizes[1]}
	flip := rng.IntN(2) == 0
	sides := [2]string{cfg.Sides[1], cfg.Sides[0]}
	if flip {
		sides = cfg.Sides
	}
	r := ratings.Result{MatchID: fmt.Sprintf("m%d", seq), GameType: cfg.GameType,
		Map: fmt.Sprintf("%s_map%d", cfg.GameType, mapIdx), DurationS: dur}
	m := &lineups{who: map[string]int{}}
	team0 := l.team(sides[0], perm[:sizes[0]], subs, dur, m)
	team1 := l.team(sides[1], perm[sizes[0]:sizes[0]+sizes[1]], subs, dur, m)
	r.Teams = []ratings.Team{team0, team1}
	p := cfg.pTrue(&r, l.pool, m.who, l.mapBias[mapIdx], flip)
	w := 1
	if rng.Float64() < p {
		w = 0
	}
	r.Winner = &w
	for _, pi := range m.played {
		l.pool[pi].skill += rng.NormFloat64() * cfg.Drift
	}
	return Match{Result: r, PTrue: p}
}

// rostersFirst draws the two rosters that meet and orders the pool's slots for the match:
// the two rosters' slots first, in order; the rest of the pool after them, as perm has them.
func (l *season) rostersFirst(perm []int) []int {
	cfg, rng := l.cfg, l.rng
	a := rng.IntN(cfg.Rosters)
	b := (a + 1 + rng.IntN(cfg.Rosters-1)) % cfg.Rosters
	lineup := make([]int, 0, cfg.Players)
	for _, r := range []int{a, b} {
		for s := range cfg.TeamSize {
			lineup = append(lineup, r*cfg.TeamSize+s)
		}
	}
	for _, pi := range perm {
		if pi/cfg.TeamSize != a && pi/cfg.TeamSize != b {
			lineup = append(lineup, pi)
		}
	}
	return lineup
}

// team draws a team on side from the pool slots of its starters: each may join late, leave
// early and be replaced from the bench; then, when the league has commanders, one of the
// players who played the whole match commands.
func (l *season) team(side string, starters []int, subs *bench, dur float64, m *lineups) ratings.Team {
	cfg, rng := l.cfg, l.rng
	team := ratings.Team{Side: side}
	var fullTimers []int // indexes into team.Players
	for _, pi := range starters {
		joined := 0.0
		if rng.Float64() < cfg.LateStart {
			joined = rng.Float64() * 0.3 * dur
		}
		left := dur
		if rng.Float64() < cfg.Substitute {
			left = joined + (0.1+0.8*rng.Float64())*(dur-joined)
			if rng.Float64() < cfg.Replace && subs.next < len(subs.slots) {
				sub := subs.slots[subs.next]
				subs.next++
				team.Players = append(team.Players, ratings.Player{ID: l.take(sub, m), JoinedS: left, LeftS: dur})
			}
		}
		if joined == 0 && left == dur {
			fullTimers = append(fullTimers, len(team.Players))
		}
		team.Players = append(team.Players, ratings.Player{ID: l.take(pi, m), JoinedS: joined, LeftS: left})
	}
	if cfg.CommandSD > 0 && len(fullTimers) > 0 {
		c := l.commander(team.Players, fullTimers, m.who)
		team.Players[c].CommanderS = dur * (0.6 + 0.4*rng.Float64())
	}
	return team
}

// take puts the player holding a pool slot in the match and returns his id; past the
// regulars, a newcomer may first take the slot over for good.
func (l *season) take(slot int, m *lineups) string {
	cfg, rng := l.cfg, l.rng
	if cfg.Newcomers > 0 && slot >= cfg.Regulars && rng.Float64() < cfg.Newcomers {
		skill := rng.NormFloat64() * cfg.SkillSD
		if cfg.NewcomerSD > 0 {
			skill = cfg.NewcomerMean + rng.NormFloat64()*cfg.NewcomerSD
		}
		l.pool[slot] = truth{skill: skill, offset: rng.NormFloat64() * cfg.OffsetSD,
			command: rng.NormFloat64() * cfg.CommandSD, likesCommand: rng.Float64() < 0.2}
		l.ids[slot] = fmt.Sprintf("n%05d", l.newcomers)
		if cfg.Smurfs > 0 && rng.Float64() < cfg.Smurfs {
			l.pool[slot].skill = cfg.SmurfSkill
			l.ids[slot] = fmt.Sprintf("s%05d", l.newcomers)
		}
		l.newcomers++
	}
	m.who[l.ids[slot]] = slot
	m.played = append(m.played, slot)
	return l.ids[slot]
}

// commander picks one of the full-timers (indexes into players) to command: most often one
// who likes commanding, if any.
func (l *season) commander(players []ratings.Player, fullTimers []int, who map[string]int) int {
	rng := l.rng
	c := fullTimers[rng.IntN(len(fullTimers))]
	if rng.Float64() < 0.8 {
		var likers []int
		for _, ft := range fullTimers {
			if l.pool[who[players[ft].ID]].likesCommand {
				likers = append(likers, ft)
			}
		}
		if len(likers) > 0 {
			c = likers[rng.IntN(len(likers))]
		}
	}
	return c
}

// pTrue is the truth's probability that team 0 wins: the NS2 model's form with a fixed round
// length and the true values. Sides[0] is the side whose offset adds (sigma = +1).
func (cfg Config) pTrue(r *ratings.Result, pool []truth, who map[string]int, bias float64, team0IsSide0 bool) float64 {
	var sumT, sumC, x, y float64
	for ti, team := range r.Teams {
		ts := 1.0
		if ti == 1 {
			ts = -1
		}
		sigma := 1.0
		if team.Side != cfg.Sides[0] {
			sigma = -1
		}
		for _, p := range team.Players {
			tr := pool[who[p.ID]]
			t := ratings.Participation(p.JoinedS, p.LeftS, cfg.RoundS)
			c := ratings.Participation(p.JoinedS, p.JoinedS+p.CommanderS, cfg.RoundS)
			sumT += t
			sumC += c
			x += ts * t * (cfg.Presence + tr.skill + sigma*tr.offset)
			y += ts * c * tr.command
		}
	}
	logit := x / sumT
	if sumC > 0 {
		logit += y / sumC
	}
	if cfg.SizeExponent != 0 {
		logit *= math.Pow(float64(cfg.TeamSize)/2, cfg.SizeExponent)
	}
	if team0IsSide0 {
		logit += bias
	} else {
		logit -= bias
	}
	return 1 / (1 + math.Exp2(-logit*math.Log2E)) // as the ratings package's sigmoid
}

// Results lists the matches' results, in order.
func Results(ms []Match) []ratings.Result {
	out := make([]ratings.Result, len(ms))
	for i, m := range ms {
		out[i] = m.Result
	}
	return out
}
