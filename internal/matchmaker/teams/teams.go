package teams

import (
	"fmt"
	"math"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// The team functions (Split, Assign, Rebalance, Advantage) share these limits, the bot rule
// and the two measures of balance. Weights are the seed's per-player weights (normalised
// 0..100 by the ratings package, 50 = an average or unknown player); any finite number in
// [0, MaxWeight] is accepted.
const (
	MinTeams  = 2    // fewest teams a split, a join or a rebalance deals with
	MaxTeams  = 4    // most teams
	MaxHumans = 256  // humans in one request (DESIGN: 256 for a team split)
	MaxWeight = 1e9  // largest accepted weight; keeps every sum far from overflow
	MaxBots   = 1024 // largest accepted bots.target_players and bots.recommended.max
	maxSeed   = 1<<53 - 1
)

// Objective says what "balanced" means when teams are compared.
type Objective string

const (
	// Ratio maximises the smallest team total divided by the largest (the seed's
	// ratio). A split's Balance is this ratio.
	Ratio Objective = "ratio"
	// Difference minimises the largest team total minus the smallest.
	Difference Objective = "difference"
)

// BotRule is the server's bot set-up: the seed's Ideal Bot Counter. Its faults name
// bots.mean_weight, bots.target_players, bots.recommended.min and bots.recommended.max.
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

// validate records the rule's faults under prefix (the option's name, "bots").
// Check adds the rule's faults to f, named prefix.mean_weight and so on, for a caller that
// takes a rule of its own (a queue's backfill).
func (r BotRule) Check(f *apperr.Fields, prefix string) { r.validate(f, prefix) }

func (r BotRule) validate(f *apperr.Fields, prefix string) {
	checkWeight(f, prefix+".mean_weight", r.MeanWeight)
	if r.TargetPlayers < 0 || r.TargetPlayers > MaxBots {
		f.Add(prefix+".target_players", "must be 0..%d", MaxBots)
	}
	if r.RecommendedMin < 0 || r.RecommendedMin > MaxBots {
		f.Add(prefix+".recommended.min", "must be 0..%d", MaxBots)
	}
	if r.RecommendedMax < 0 || r.RecommendedMax > MaxBots {
		f.Add(prefix+".recommended.max", "must be 0..%d", MaxBots)
	} else if r.RecommendedMin >= 0 && r.RecommendedMax < r.RecommendedMin {
		f.Add(prefix+".recommended.max", "must be at least recommended.min (%d)", r.RecommendedMin)
	}
}

// Balance measures team totals: balance is the smallest divided by the largest (1 when
// every total is 0), difference the largest minus the smallest.
func Balance(totals []float64) (balance, difference float64) {
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

// scoreRange turns the smallest and largest totals into a cost, lower is better: the
// difference, or for the ratio objective (max-min)/max = 1 - ratio, computed without the
// cancellation of 1 - min/max.
func scoreRange(obj Objective, lo, hi float64) float64 {
	d := hi - lo
	if obj == Ratio {
		if hi <= 0 {
			return 0
		}
		return d / hi
	}
	return d
}

// scoreOf scores a full vector of totals.
func scoreOf(obj Objective, totals []float64) float64 {
	lo, hi := totals[0], totals[0]
	for _, x := range totals[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return scoreRange(obj, lo, hi)
}

// defaultObjective is the default of every team function: the seed's ratio when bots are
// in play and every weight is positive (so no total can be 0 and the ratio means something),
// the difference otherwise.
func defaultObjective(bots bool, allPositive bool) Objective {
	if bots && allPositive {
		return Ratio
	}
	return Difference
}

func checkObjective(f *apperr.Fields, field string, o Objective) {
	switch o {
	case "", Ratio, Difference:
	default:
		f.Add(field, "must be %q or %q", Ratio, Difference)
	}
}

// checkWeight records a weight that is not a finite number in [0, MaxWeight].
func checkWeight(f *apperr.Fields, field string, w float64) bool {
	if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 || w > MaxWeight {
		f.Add(field, "must be a finite number in [0, %g]", float64(MaxWeight))
		return false
	}
	return true
}

func checkTeams(f *apperr.Fields, field string, n int) bool {
	if n < MinTeams || n > MaxTeams {
		f.Add(field, "must be %d..%d teams", MinTeams, MaxTeams)
		return false
	}
	return true
}

// DefaultMaxHumans is the default max_humans_per_team when bots are in play: the seed
// program's cap, max(ceil(humans/teams), floor(9*humans/(8*teams))), 9 of 17 for two teams.
// Without it the seed's example would put 13 humans against 4 humans and 9 bots.
func DefaultMaxHumans(humans, teams int) int {
	return max((humans+teams-1)/teams, 9*humans/(8*teams))
}

// Roster is a team that is already playing: the weights of its humans and of its bots
// (each bot's own weight, not the mean). Faults name a roster's weights by their place in
// the teams given: teams[i].players[j] and teams[i].bots[j].
type Roster struct {
	Players []float64
	Bots    []float64
}

// Total is the team's strength: the sum of its humans' and its bots' weights.
func (r Roster) Total() float64 {
	s := 0.0
	for _, w := range r.Players {
		s += w
	}
	for _, w := range r.Bots {
		s += w
	}
	return s
}

// checkRosters validates teams of rosters: 2..4 teams, at most MaxHumans humans
// (plus extraHumans still to place), at most MaxBots bots, every weight valid. It
// reports whether every weight is positive.
func checkRosters(f *apperr.Fields, teams []Roster, extraHumans int) (allPositive bool) {
	allPositive = true
	if !checkTeams(f, "teams", len(teams)) {
		if len(teams) > MaxTeams {
			return false
		}
	}
	humans, bots := extraHumans, 0
	for i, t := range teams {
		humans += len(t.Players)
		bots += len(t.Bots)
		for j, w := range t.Players {
			if !checkWeight(f, fmt.Sprintf("teams[%d].players[%d]", i, j), w) || w == 0 {
				allPositive = false
			}
		}
		for j, w := range t.Bots {
			if !checkWeight(f, fmt.Sprintf("teams[%d].bots[%d]", i, j), w) || w == 0 {
				allPositive = false
			}
		}
	}
	if humans > MaxHumans {
		f.Add("teams", "at most %d human players in all", MaxHumans)
	}
	if bots > MaxBots {
		f.Add("teams", "at most %d bots in all", MaxBots)
	}
	return allPositive
}
