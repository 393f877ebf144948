package teams

import (
	"math"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// AssignOptions are the settings of a late join; zero values mean the defaults.
type AssignOptions struct {
	// "bots": the server's bot rule. With it, joining changes the bots: the Ideal Bot
	// Counter brings every team to MinPlayers/teams players once the joiner is in, so the
	// team joined may lose a bot (valued at the mean of that team's bots: which one leaves is
	// not known) or, if it had none to lose and is now the largest, every other team gains
	// one (valued at MeanWeight: which one comes is not known). This is the seed's rule for
	// late arrivals. Without it the bots in the rosters stay as they are.
	Bots *BotRule
	// "max_humans_per_team": with bots, the joiner may not make a team larger than this;
	// 0 means DefaultMaxHumans of the humans after the join. Without bots the joiner
	// always goes to one of the teams with the fewest humans, as a split would.
	MaxHumansPerTeam int
	Objective        Objective // "objective", default as for Split
	// Humans is how many players the joiner brings (a party that joins one team, its
	// weight their sum); 0 means 1. The bot rule and the cap count them all.
	Humans int
	// Closed marks teams that take no joiner (a running match's team without an open slot
	// for him); they still count in the balance. Missing entries are open.
	Closed []bool
}

// AssignChoice is what joining one team would give.
type AssignChoice struct {
	Team    int
	Allowed bool // false: the team is at the cap or, without bots, not among the smallest
	// BotChange is the bots each team gains (+) or loses (-) by the bot rule.
	BotChange  []int
	Totals     []float64 // each team's expected total after the join
	Balance    float64
	Difference float64
}

// AssignResult is the team the joiner goes to and the state it leaves.
type AssignResult struct {
	AssignChoice                // the chosen team's choice
	Before       []float64      // each team's total before the join (specific bot weights)
	Objective    Objective      // the objective the choice minimised
	MaxHumans    int            // the cap in force with bots; 0 without
	Choices      []AssignChoice // every team, allowed or not, in team order
}

// Assign places one late joiner (its weight) on the team that leaves the best balance,
// counting the bots the join removes or adds. It never moves anyone already placed. Ties go
// to the team with fewer humans, then to the lower index.
func Assign(teams []Roster, joiner float64, opt AssignOptions) (AssignResult, error) {
	var f apperr.Fields
	allPositive := checkRosters(&f, teams, 1)
	if !checkWeight(&f, "joiner", joiner) || joiner == 0 {
		allPositive = false
	}
	if opt.Bots != nil {
		opt.Bots.validate(&f, "bots")
		allPositive = allPositive && opt.Bots.MeanWeight > 0
	}
	size := max(opt.Humans, 1)
	if opt.Humans < 0 {
		f.Add("humans", "must not be negative")
	}
	humans := size
	for _, t := range teams {
		humans += len(t.Players)
	}
	nt := len(teams)
	switch {
	case opt.MaxHumansPerTeam < 0:
		f.Add("max_humans_per_team", "must not be negative")
	case opt.MaxHumansPerTeam > 0 && nt > 0 && opt.MaxHumansPerTeam < (humans+nt-1)/nt:
		f.Add("max_humans_per_team", "must be at least %d to fit %d players on %d teams", (humans+nt-1)/nt, humans, nt)
	}
	checkObjective(&f, "objective", opt.Objective)
	if err := f.Err(); err != nil {
		return AssignResult{}, err
	}

	r := AssignResult{Objective: opt.Objective, MaxHumans: opt.MaxHumansPerTeam}
	if r.Objective == "" {
		r.Objective = defaultObjective(opt.Bots != nil, allPositive)
	}
	if r.MaxHumans == 0 {
		r.MaxHumans = DefaultMaxHumans(humans, nt)
	}
	closed := func(j int) bool { return j < len(opt.Closed) && opt.Closed[j] }
	fewest := math.MaxInt
	for j, t := range teams {
		r.Before = append(r.Before, t.Total())
		if !closed(j) {
			fewest = min(fewest, len(t.Players))
		}
	}
	best, bestScore := -1, math.Inf(1)
	for j := range teams {
		c := assignTry(teams, joiner, size, j, opt.Bots)
		if opt.Bots != nil {
			c.Allowed = len(teams[j].Players)+size <= r.MaxHumans
		} else {
			c.Allowed = len(teams[j].Players) == fewest
		}
		c.Allowed = c.Allowed && !closed(j)
		r.Choices = append(r.Choices, c)
		if !c.Allowed {
			continue
		}
		sc := scoreOf(r.Objective, c.Totals)
		if best < 0 || sc < bestScore || sc == bestScore && len(teams[j].Players) < len(teams[best].Players) {
			best, bestScore = j, sc
		}
	}
	if opt.Bots == nil {
		r.MaxHumans = 0
	}
	if best < 0 {
		return AssignResult{}, apperr.New(apperr.Invalid, "no team can take the joiner: every team is closed or at the cap")
	}
	r.AssignChoice = r.Choices[best]
	return r, nil
}

// assignTry is the state after the joiner (size humans) joins team j.
func assignTry(teams []Roster, joiner float64, size, j int, bots *BotRule) AssignChoice {
	nt := len(teams)
	c := AssignChoice{Team: j, BotChange: make([]int, nt), Totals: make([]float64, nt)}
	largest := 0
	for k, t := range teams {
		h := len(t.Players)
		if k == j {
			h += size
		}
		largest = max(largest, h)
	}
	per := 0
	if bots != nil {
		per = bots.MinPlayers(largest, nt) / nt
	}
	for k, t := range teams {
		c.Totals[k] = t.Total()
		h := len(t.Players)
		if k == j {
			c.Totals[k] += joiner
			h += size
		}
		if bots == nil {
			continue
		}
		have := len(t.Bots)
		change := per - h - have
		c.BotChange[k] = change
		switch {
		case change > 0:
			c.Totals[k] += float64(change) * bots.MeanWeight
		case change < 0:
			sum := 0.0
			for _, w := range t.Bots {
				sum += w
			}
			c.Totals[k] += float64(change) * sum / float64(have)
		}
	}
	c.Balance, c.Difference = Balance(c.Totals)
	return c
}
