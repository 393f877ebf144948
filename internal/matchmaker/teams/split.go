package teams

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Limits of the exact searches, shared by Split and Rebalance's placement, and Split's
// defaults.
const (
	ExactLimit2       = 40  // humans up to which placing them on 2 teams is exact (meet in the middle)
	ExactLimit34      = 20  // ... on 3 or 4 teams (branch and bound, within NodeBudget)
	NodeBudget        = 4e6 // branch-and-bound nodes before a 3-4 team search gives up (~90 ms)
	DefaultCandidates = 5
	MaxCandidates     = 20 // the seed program's cands[20]
)

// Selection says which of the kept candidates becomes the split.
type Selection string

const (
	SelectBest Selection = "best" // the most balanced (default)
	// SelectWeighted picks a candidate at random with probability proportional to its
	// Balance, as the seed's select_cand does, so the same players do not always end up
	// together.
	SelectWeighted Selection = "weighted"
)

// SplitOptions are Split's settings; zero values mean the defaults. Each field's comment
// starts with the option's name in faults (the HTTP request's JSON uses the same names).
type SplitOptions struct {
	Teams int // "teams": 2..4, required
	// "bots": nil for no bots (team sizes then differ by at most one); else every team is
	// topped up with bots of Bots.MeanWeight by the Ideal Bot Counter rule (BotRule.MinPlayers).
	Bots *BotRule
	// "max_humans_per_team": 0 for the default, DefaultMaxHumans when bots are in play.
	// It must be at least ceil(humans/teams). Without bots the sizes are as even as possible
	// anyway and a cap only has to allow that.
	MaxHumansPerTeam int
	Candidates       int       // "candidates": how many of the best splits to keep, 1..20, default 5
	Selection        Selection // "selection": "best" (default) or "weighted"
	// "seed": makes "weighted" reproducible, 0..2^53-1 (a number every JSON client holds
	// exactly). nil: Split draws one and reports it in SplitResult.Seed.
	Seed *int64
	// "objective": "ratio" or "difference"; default ratio when bots are in play and every
	// weight (bots' too) is positive, difference otherwise.
	Objective Objective
}

// Team is one team of a split.
type Team struct {
	Players []int   // indices into the weights given to Split, ascending
	Bots    int     // bots of the mean weight topping the team up
	Total   float64 // humans' weights plus Bots x mean bot weight
}

// Candidate is one of the best splits found.
type Candidate struct {
	Teams      []Team  // team 0 holds player 0; teams without humans come last
	Balance    float64 // smallest total / largest total (1 when all are 0)
	Difference float64 // largest total - smallest total
}

// SplitResult is the chosen split and how it was found.
type SplitResult struct {
	Candidate              // the chosen split
	Chosen     int         // its index in Candidates
	Candidates []Candidate // the best splits found, best first (at most Candidates)
	MinPlayers int         // players (humans + bots) the chosen split fills; 0 without bots
	Exact      bool        // Candidates are the true best splits (false: a heuristic's)
	Objective  Objective
	Selection  Selection
	MaxHumans  int   // the max_humans_per_team in force (ceil(humans/teams) without bots)
	Seed       int64 // the seed of the weighted pick (given or drawn)
}

// settings are the options with defaults resolved.
type settings struct {
	t, k, maxHumans int
	obj             Objective
	sel             Selection
	seed            int64
	bots            *BotRule
	exactLimit      int
}

// validate checks the request and resolves the defaults.
func (o SplitOptions) validate(weights []float64) (settings, error) {
	var f apperr.Fields
	n := len(weights)
	s := settings{t: o.Teams, k: o.Candidates, maxHumans: o.MaxHumansPerTeam,
		obj: o.Objective, sel: o.Selection, bots: o.Bots}
	teamsOK := checkTeams(&f, "teams", o.Teams)
	if n == 0 {
		f.Add("weights", "must hold at least one player")
	}
	if n > MaxHumans {
		f.Add("weights", "at most %d players", MaxHumans)
		return s, f.Err()
	}
	allPositive := true
	for i, w := range weights {
		if !checkWeight(&f, fmt.Sprintf("weights[%d]", i), w) || w == 0 {
			allPositive = false
		}
	}
	if o.Bots != nil {
		o.Bots.validate(&f, "bots")
		if o.Bots.MeanWeight <= 0 {
			allPositive = false
		}
	}
	switch {
	case o.MaxHumansPerTeam < 0:
		f.Add("max_humans_per_team", "must not be negative")
	case o.MaxHumansPerTeam > 0 && teamsOK && o.MaxHumansPerTeam < (n+o.Teams-1)/o.Teams:
		f.Add("max_humans_per_team", "must be at least %d to fit %d players on %d teams",
			(n+o.Teams-1)/o.Teams, n, o.Teams)
	}
	if o.Candidates < 0 || o.Candidates > MaxCandidates {
		f.Add("candidates", "must be 1..%d", MaxCandidates)
	}
	switch o.Selection {
	case "", SelectBest, SelectWeighted:
	default:
		f.Add("selection", "must be %q or %q", SelectBest, SelectWeighted)
	}
	if o.Seed != nil && (*o.Seed < 0 || *o.Seed > maxSeed) {
		f.Add("seed", "must be 0..%d", int64(maxSeed))
	}
	checkObjective(&f, "objective", o.Objective)
	if err := f.Err(); err != nil {
		return s, err
	}

	if s.k == 0 {
		s.k = DefaultCandidates
	}
	if s.sel == "" {
		s.sel = SelectBest
	}
	if s.obj == "" {
		s.obj = defaultObjective(o.Bots != nil, allPositive)
	}
	ceil := (n + s.t - 1) / s.t
	switch {
	case o.Bots == nil:
		s.maxHumans = ceil
	case s.maxHumans == 0:
		s.maxHumans = DefaultMaxHumans(n, s.t)
	}
	s.maxHumans = min(s.maxHumans, n)
	if o.Seed != nil {
		s.seed = *o.Seed
	} else {
		s.seed = rand.Int64N(maxSeed + 1)
	}
	s.exactLimit = [...]int{2: ExactLimit2, 3: ExactLimit34, 4: ExactLimit34}[s.t]
	return s, nil
}

// Split divides the humans (by weight) into opt.Teams balanced teams, topped up with bots
// when opt.Bots is set, and returns the best few splits with one of them chosen.
//
// It is exact up to ExactLimit2 humans for 2 teams and ExactLimit34 for 3-4: the candidates
// are the true best splits under the objective (for 3-4 teams unless the node budget runs
// out first, which Exact reports), to within rounding: scores closer than about 1e-12 of
// the total weight are ties, and of tied splits the first found is kept. Above, a heuristic
// gives Exact = false. Two splits are the same when
// they group the humans the same way: teams have no names here.
func Split(weights []float64, opt SplitOptions) (SplitResult, error) {
	s, err := opt.validate(weights)
	if err != nil {
		return SplitResult{}, err
	}
	p := newSplitProblem(weights, s)
	top, exact := solve(p, s, NodeBudget)
	return splitResult(p, s, top, exact), nil
}

// solve runs the exact search when the split is small enough, else (or when branch and
// bound runs out of budget) the heuristic.
func solve(p *problem, s settings, budget int) (*shortlist, bool) {
	top := &shortlist{k: s.k, sym: true}
	exact := false
	switch {
	case len(p.w) <= s.exactLimit && s.t == 2:
		p.mitm(top)
		exact = true
	case len(p.w) <= s.exactLimit:
		exact = p.bnb(top, budget)
	}
	if !exact {
		// The heuristic joins what an interrupted search found; it may repeat a split.
		top.dedupe = true
		p.heuristic(top)
	}
	return top, exact
}

// newSplitProblem lists the classes: every head-count vector c_1 >= ... >= c_t summing to
// the humans, with c_1 <= maxHumans, or without bots the one vector as even as possible.
// Bots make every team P = MinPlayers(c_1)/t players, so team j gets P - c_j bots.
//
// Above the exact limit only the most even vectors are listed: those of spread c_1 - c_t up
// to the largest spread that keeps them within maxClasses. A generous cap on 4 teams of
// 256 humans allows 123,464 vectors; listing them all costs more than the search.
func newSplitProblem(weights []float64, s settings) *problem {
	p := newProblem(weights, s.t, s.obj, true)
	n := len(weights)
	caps := make([]int, s.t)
	if s.bots == nil {
		for j := range caps {
			caps[j] = n / s.t
			if j < n%s.t {
				caps[j]++
			}
		}
		p.addSplitClass(caps, s)
		return p
	}
	// gen fills caps[j:] with at most hi each, at least floor each, summing to left; it
	// stops after limit vectors and returns how many it saw.
	var gen func(j, left, hi, spread, limit int, add bool) int
	gen = func(j, left, hi, spread, limit int, add bool) int {
		if j == s.t-1 {
			if left > hi || caps[0]-left > spread {
				return 0
			}
			caps[j] = left
			if add {
				p.addSplitClass(caps, s)
			}
			return 1
		}
		seen := 0
		for c := min(hi, left); c*(s.t-j) >= left && seen < limit; c-- {
			if j > 0 && caps[0]-c > spread {
				break
			}
			caps[j] = c
			seen += gen(j+1, left-c, c, spread, limit-seen, add)
		}
		return seen
	}
	spread := n
	if n > s.exactLimit {
		for sp := 0; sp < n; sp++ {
			if gen(0, n, s.maxHumans, sp+1, maxClasses+1, false) > maxClasses {
				spread = sp
				break
			}
		}
	}
	gen(0, n, s.maxHumans, spread, math.MaxInt, true)
	return p
}

// maxClasses bounds the head-count vectors a heuristic split looks at.
const maxClasses = 4096

func (p *problem) addSplitClass(caps []int, s settings) {
	t := len(caps)
	var bots [MaxTeams]int
	var base [MaxTeams]float64
	if s.bots != nil {
		per := s.bots.MinPlayers(caps[0], t) / t
		for j := range t {
			bots[j] = per - caps[j]
			base[j] = float64(bots[j]) * s.bots.MeanWeight
		}
	}
	p.addClass(caps, bots[:t], base[:t])
}

func splitResult(p *problem, s settings, top *shortlist, exact bool) SplitResult {
	r := SplitResult{Exact: exact, Objective: s.obj, Selection: s.sel, MaxHumans: s.maxHumans, Seed: s.seed}
	mean := 0.0
	if s.bots != nil {
		mean = s.bots.MeanWeight
	}
	type scored struct {
		c     Candidate
		score float64
		class int
	}
	var list []scored
	for _, cand := range top.list {
		cl := &p.classes[cand.class]
		teams := make([]Team, p.t)
		for j := range teams {
			teams[j].Bots = cl.bots[j]
		}
		for i, j := range cand.assign {
			teams[j].Players = append(teams[j].Players, i)
		}
		totals := make([]float64, p.t)
		for j := range teams {
			for _, i := range teams[j].Players {
				teams[j].Total += p.w[i]
			}
			teams[j].Total += float64(teams[j].Bots) * mean
			totals[j] = teams[j].Total
		}
		// Name the teams by their first player; teams of bots only go last.
		sort.SliceStable(teams, func(a, b int) bool {
			pa, pb := teams[a].Players, teams[b].Players
			if len(pa) == 0 || len(pb) == 0 {
				return len(pa) > len(pb)
			}
			return pa[0] < pb[0]
		})
		bal, diff := Balance(totals)
		list = append(list, scored{Candidate{teams, bal, diff}, scoreOf(s.obj, totals), cand.class})
	}
	// Scores were compared as the search computed them; order by the reported totals.
	sort.SliceStable(list, func(a, b int) bool { return list[a].score < list[b].score })
	for _, x := range list {
		r.Candidates = append(r.Candidates, x.c)
	}
	if s.sel == SelectWeighted {
		r.Chosen = pickWeighted(r.Candidates, s.seed)
	}
	r.Candidate = r.Candidates[r.Chosen]
	if s.bots != nil {
		cl := &p.classes[list[r.Chosen].class]
		r.MinPlayers = s.bots.MinPlayers(cl.caps[0], p.t)
	}
	return r
}

// pickWeighted is the seed's select_cand with power 1: candidate i with probability
// Balance_i / sum of Balances (the best when every Balance is 0).
func pickWeighted(c []Candidate, seed int64) int {
	sum := 0.0
	for _, x := range c {
		sum += x.Balance
	}
	if sum <= 0 {
		return 0
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7465616d73706c74)) // "teamsplt"
	chosen := rng.Float64() * sum
	for i, x := range c {
		chosen -= x.Balance
		if chosen < 0 {
			return i
		}
	}
	return len(c) - 1
}
