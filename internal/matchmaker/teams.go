package matchmaker

import (
	"fmt"
	"math"

	"matchmaker/internal/apperr"
)

// The team functions (Split, Assign, Rebalance, Advantage) share these limits, the bot rule
// and the two measures of balance. Weights are the seed's per-player weights (normalised
// 0..100 by the ratings package, 50 = an average or unknown player); any finite number in
// [0, TeamMaxWeight] is accepted.
const (
	TeamMinTeams  = 2    // fewest teams a split, a join or a rebalance deals with
	TeamMaxTeams  = 4    // most teams
	TeamMaxHumans = 256  // humans in one request (DESIGN: 256 for a team split)
	TeamMaxWeight = 1e9  // largest accepted weight; keeps every sum far from overflow
	BotMaxPlayers = 1024 // largest accepted bots.target_players and bots.recommended.max
	teamSeedLimit = 1<<53 - 1
)

// SplitObjective says what "balanced" means when teams are compared.
type SplitObjective string

const (
	// SplitRatio maximises the smallest team total divided by the largest (the seed's
	// ratio). A split's Balance is this ratio.
	SplitRatio SplitObjective = "ratio"
	// SplitDifference minimises the largest team total minus the smallest.
	SplitDifference SplitObjective = "difference"
)

// BotRule is the server's bot set-up: the seed's Ideal Bot Counter. JSON: "bots" with
// "mean_weight", "target_players" and "recommended" {"min", "max"}.
type BotRule struct {
	MeanWeight     float64 // weight of a bot whose identity is not known yet (MEANBOT)
	TargetPlayers  int     // the server's preferred MinPlayers
	RecommendedMin int     // the map's recommended player range
	RecommendedMax int
}

// MinPlayers is the Ideal Bot Counter rule: the target clamped to the map's recommended
// range, rounded up to a multiple of teams, and at least largest (the human count of the
// largest team) times teams. Every team is topped up with bots to MinPlayers/teams players.
func (r BotRule) MinPlayers(largest, teams int) int {
	n := min(max(r.TargetPlayers, r.RecommendedMin), r.RecommendedMax)
	n = (n + teams - 1) / teams * teams
	return max(n, largest*teams)
}

// validate records the rule's faults under prefix ("bots").
func (r BotRule) validate(f *apperr.Fields, prefix string) {
	teamCheckWeight(f, prefix+".mean_weight", r.MeanWeight)
	if r.TargetPlayers < 0 || r.TargetPlayers > BotMaxPlayers {
		f.Add(prefix+".target_players", "must be 0..%d", BotMaxPlayers)
	}
	if r.RecommendedMin < 0 || r.RecommendedMin > BotMaxPlayers {
		f.Add(prefix+".recommended.min", "must be 0..%d", BotMaxPlayers)
	}
	if r.RecommendedMax < 0 || r.RecommendedMax > BotMaxPlayers {
		f.Add(prefix+".recommended.max", "must be 0..%d", BotMaxPlayers)
	} else if r.RecommendedMin >= 0 && r.RecommendedMax < r.RecommendedMin {
		f.Add(prefix+".recommended.max", "must be at least recommended.min (%d)", r.RecommendedMin)
	}
}

// TeamBalance measures team totals: balance is the smallest divided by the largest (1 when
// every total is 0), difference the largest minus the smallest.
func TeamBalance(totals []float64) (balance, difference float64) {
	if len(totals) == 0 {
		return 1, 0
	}
	lo, hi := totals[0], totals[0]
	for _, x := range totals[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	if hi <= 0 {
		return 1, hi - lo
	}
	return lo / hi, hi - lo
}

// teamScore turns the smallest and largest totals into a cost, lower is better: the
// difference, or for the ratio objective (max-min)/max = 1 - ratio, computed without the
// cancellation of 1 - min/max.
func teamScore(obj SplitObjective, lo, hi float64) float64 {
	d := hi - lo
	if obj == SplitRatio {
		if hi <= 0 {
			return 0
		}
		return d / hi
	}
	return d
}

// teamScoreOf scores a full vector of totals.
func teamScoreOf(obj SplitObjective, totals []float64) float64 {
	lo, hi := totals[0], totals[0]
	for _, x := range totals[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return teamScore(obj, lo, hi)
}

// teamDefaultObjective is the default of every team function: the seed's ratio when bots are
// in play and every weight is positive (so no total can be 0 and the ratio means something),
// the difference otherwise.
func teamDefaultObjective(bots bool, allPositive bool) SplitObjective {
	if bots && allPositive {
		return SplitRatio
	}
	return SplitDifference
}

func teamCheckObjective(f *apperr.Fields, field string, o SplitObjective) {
	switch o {
	case "", SplitRatio, SplitDifference:
	default:
		f.Add(field, "must be %q or %q", SplitRatio, SplitDifference)
	}
}

// teamCheckWeight records a weight that is not a finite number in [0, TeamMaxWeight].
func teamCheckWeight(f *apperr.Fields, field string, w float64) bool {
	if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 || w > TeamMaxWeight {
		f.Add(field, "must be a finite number in [0, %g]", float64(TeamMaxWeight))
		return false
	}
	return true
}

func teamCheckTeams(f *apperr.Fields, field string, n int) bool {
	if n < TeamMinTeams || n > TeamMaxTeams {
		f.Add(field, "must be %d..%d teams", TeamMinTeams, TeamMaxTeams)
		return false
	}
	return true
}

// TeamDefaultMaxHumans is the default max_humans_per_team when bots are in play: the seed
// program's cap, max(ceil(humans/teams), floor(9*humans/(8*teams))), 9 of 17 for two teams.
// Without it the seed's example would put 13 humans against 4 humans and 9 bots.
func TeamDefaultMaxHumans(humans, teams int) int {
	return max((humans+teams-1)/teams, 9*humans/(8*teams))
}

// TeamRoster is a team that is already playing: the weights of its humans and of its bots
// (each bot's own weight, not the mean). JSON: {"players": [{"id", "weight"}], "bots":
// [{"name", "weight"}]}; errors name teams[i].players[j].weight and teams[i].bots[j].weight.
type TeamRoster struct {
	Players []float64
	Bots    []float64
}

// Total is the team's strength: the sum of its humans' and its bots' weights.
func (r TeamRoster) Total() float64 {
	s := 0.0
	for _, w := range r.Players {
		s += w
	}
	for _, w := range r.Bots {
		s += w
	}
	return s
}

// teamCheckRosters validates teams of rosters: 2..4 teams, at most TeamMaxHumans humans
// (plus extraHumans still to place), at most BotMaxPlayers bots, every weight valid. It
// reports whether every weight is positive.
func teamCheckRosters(f *apperr.Fields, teams []TeamRoster, extraHumans int) (allPositive bool) {
	allPositive = true
	if !teamCheckTeams(f, "teams", len(teams)) {
		if len(teams) > TeamMaxTeams {
			return false
		}
	}
	humans, bots := extraHumans, 0
	for i, t := range teams {
		humans += len(t.Players)
		bots += len(t.Bots)
		for j, w := range t.Players {
			if !teamCheckWeight(f, fmt.Sprintf("teams[%d].players[%d].weight", i, j), w) || w == 0 {
				allPositive = false
			}
		}
		for j, w := range t.Bots {
			if !teamCheckWeight(f, fmt.Sprintf("teams[%d].bots[%d].weight", i, j), w) || w == 0 {
				allPositive = false
			}
		}
	}
	if humans > TeamMaxHumans {
		f.Add("teams", "at most %d human players in all", TeamMaxHumans)
	}
	if bots > BotMaxPlayers {
		f.Add("teams", "at most %d bots in all", BotMaxPlayers)
	}
	return allPositive
}
