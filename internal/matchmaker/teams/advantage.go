package teams

import (
	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Strength is one team's strength.
type Strength struct {
	Total          float64 // humans' and bots' weights
	WinProbability float64 // total / sum of totals (1/teams when every total is 0)
	// Handicap is the multiplier that evens this team with the strongest: strongest total /
	// this total ("give Red a 1.1 advantage over Blue" when Blue is 10% stronger). 1 for the
	// strongest; 0 when this team's total is 0 and another's is not (no multiplier helps).
	Handicap float64
}

// AdvantageResult is every team's strength, in team order.
type AdvantageResult struct {
	Teams      []Strength
	Strongest  int     // the team with the largest total (the first such)
	Balance    float64 // smallest total / largest
	Difference float64 // largest total - smallest
}

// Advantage measures teams that are playing, with their specific bots (the seed: "keep track
// of both teams' total weights, using specific bot weights, not averages, and find out what
// advantage one team has over the other").
//
// The win model is Bradley-Terry on the totals (Luce's choice rule for 3-4 teams): team i
// wins with probability total_i / sum of totals. Why this one:
//   - the weights are a ratio scale (0..100, 50 = average; the seed measures balance as
//     smaller total / larger total), and Bradley-Terry depends only on ratios of totals, so
//     the seed's balance r gives the weaker of two teams exactly r / (1 + r);
//   - it needs no parameter: a logistic on the difference needs a scale the weights do not
//     carry (the ratings package has one, in its own units, for its own predictions);
//   - it matches the handicap: multiplying each team's total by its handicap makes every
//     probability 1/teams, which is what "evening the teams" means.
//
// It is a model of the weights, not a fitted predictor: the ratings package's model is the
// one to ask for calibrated win probabilities.
//
// Faults name teams, teams[i].players[j] and teams[i].bots[j].
func Advantage(teams []Roster) (AdvantageResult, error) {
	var f apperr.Fields
	checkRosters(&f, teams, 0)
	if err := f.Err(); err != nil {
		return AdvantageResult{}, err
	}
	r := AdvantageResult{Teams: make([]Strength, len(teams))}
	totals := make([]float64, len(teams))
	sum := 0.0
	for j, t := range teams {
		totals[j] = t.Total()
		sum += totals[j]
		if totals[j] > totals[r.Strongest] {
			r.Strongest = j
		}
	}
	top := totals[r.Strongest]
	for j, x := range totals {
		a := &r.Teams[j]
		a.Total = x
		switch {
		case sum == 0:
			a.WinProbability, a.Handicap = 1/float64(len(teams)), 1
		case x == 0:
			a.WinProbability, a.Handicap = 0, 0
		default:
			a.WinProbability, a.Handicap = x/sum, top/x
		}
	}
	r.Balance, r.Difference = Balance(totals)
	return r, nil
}
