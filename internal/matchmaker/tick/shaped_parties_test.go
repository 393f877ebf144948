package tick

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Random small queues of two teams (without compositions) with many parties: every full
// match is at least as even as the first full group the walk would have taken (brute force:
// the anchor's acceptable candidates nearest first, each kept while the group's rules hold
// and its parties pack, at the moment the anchor was served) when that group keeps the
// balance; every match keeps the shape, the rules and the balance and nobody is matched
// twice (checkMatches), and the oldest ticket waits only without a match (as
// TestShapedAgainstBruteForce).
func TestShapedPartiesChosenForTheirTeamsAreNeverLessEven(t *testing.T) {
	t.Parallel()
	runs := 8000
	if testing.Short() {
		runs = 800
	}
	rng := rand.New(rand.NewPCG(17, 19))
	compared, evener := 0, 0
	for run := 0; run < runs; {
		tk, cfg := testqueue.RandomShaped(rng)
		if len(cfg.Shape) != 2 || slices.ContainsFunc(cfg.Shape, func(d matchrules.TeamDef) bool { return len(d.Composition) > 0 }) {
			continue
		}
		run++
		for i := range tk { // parties in half the tickets; no two ratings equal
			for len(tk[i].Ratings) < cfg.TeamSize && rng.IntN(2) == 0 {
				tk[i].Ratings = append(tk[i].Ratings, float64(rng.IntN(60)))
			}
			for j := range tk[i].Ratings {
				tk[i].Ratings[j] += rng.Float64() / 1000
			}
		}
		res, err := Run(tk, 60, cfg)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		ref := shapedRef{tk: tk, cfg: cfg, now: 60}
		if msg := ref.checkMatches(res.Matches); msg != "" {
			t.Fatalf("run %d: %s\nconfig %+v\ntickets %+v\nmatches %+v", run, msg, cfg, tk, res.Matches)
		}
		if o := ref.oldest(); ref.matchExists(o) && !slices.ContainsFunc(res.Matches, func(m matchpool.Match) bool { return slices.Contains(m.Tickets, o) }) {
			t.Fatalf("run %d: the oldest ticket %d has a match and waits (%+v)", run, o, res.Waiting)
		}
		free := map[int]bool{}
		for i := range tk {
			free[i] = true
		}
		for _, m := range res.Matches {
			a := m.Tickets[0]
			if g := ref.firstFullGroup(a, free); g != nil && ref.players(m.Tickets) == ref.capacity() {
				if was, ok := ref.bestSpread(g); ok {
					got, _ := ref.bestSpread(m.Tickets)
					if got > was+1e-9 {
						t.Fatalf("run %d: match %v spreads at best by %g, the walk's first group %v by %g\nconfig %+v\ntickets %+v",
							run, m.Tickets, got, g, was, cfg, tk)
					}
					compared++
					if !slices.Equal(g, m.Tickets) {
						evener++
					}
				}
			}
			for _, i := range m.Tickets {
				free[i] = false
			}
		}
	}
	if compared < runs/10 || evener < runs/400 {
		t.Fatalf("%d matches compared, %d of them not the walk's group, in %d runs: the test hardly tests", compared, evener, runs)
	}
	t.Logf("%d matches compared, %d of them not the walk's group, in %d runs", compared, evener, runs)
}

func (r *shapedRef) capacity() int {
	n := 0
	for _, d := range r.cfg.Shape {
		n += d.Size
	}
	return n
}

func (r *shapedRef) players(s []int) int {
	n := 0
	for _, i := range s {
		n += len(r.tk[i].Ratings)
	}
	return n
}

// firstFullGroup is the group the shaped walk of anchor a fills first among the free
// tickets: its acceptable candidates (both intervals, the rules binding both) nearest
// first, each taken when the group's rules still hold and its parties still pack into the
// teams; nil when it fills none.
func (r *shapedRef) firstFullGroup(a int, free map[int]bool) []int {
	var cands []int
	for c := range r.tk {
		if c != a && free[c] && r.accepts(a, c) && r.groupRulesBroken([]int{a, c}) == "" {
			cands = append(cands, c)
		}
	}
	slices.SortFunc(cands, func(x, y int) int {
		return cmp.Compare(math.Abs(r.mean(x)-r.mean(a)), math.Abs(r.mean(y)-r.mean(a)))
	})
	g := []int{a}
	for _, c := range cands {
		next := append(slices.Clone(g), c)
		if r.players(next) > r.capacity() || r.groupRulesBroken(next) != "" || !r.packs(next) {
			continue
		}
		if g = next; r.players(g) == r.capacity() {
			return g
		}
	}
	return nil
}

// packs: the parties of s fit the teams' sizes some way.
func (r *shapedRef) packs(s []int) bool {
	used := make([]int, len(r.cfg.Shape))
	var try func(j int) bool
	try = func(j int) bool {
		if j == len(s) {
			return true
		}
		for k, d := range r.cfg.Shape {
			if n := len(r.tk[s[j]].Ratings); used[k]+n <= d.Size {
				used[k] += n
				ok := try(j + 1)
				used[k] -= n
				if ok {
					return true
				}
			}
		}
		return false
	}
	return try(0)
}

// bestSpread is the least spread of team averages over the valid full splits of s (every
// rule judged on the split, and the balance, kept).
func (r *shapedRef) bestSpread(s []int) (float64, bool) {
	full := make([]int, len(r.cfg.Shape))
	for k, d := range r.cfg.Shape {
		full[k] = d.Size
	}
	team := make([]int, len(s))
	best := math.Inf(1)
	var try func(j int)
	try = func(j int) {
		if j < len(s) {
			for k := range r.cfg.Shape {
				team[j] = k
				try(j + 1)
			}
			return
		}
		if r.splitBroken(s, team, full) != "" {
			return
		}
		sum, n := make([]float64, len(full)), make([]int, len(full))
		for i, x := range s {
			for _, v := range r.tk[x].Ratings {
				sum[team[i]] += v
				n[team[i]]++
			}
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for k := range full {
			lo, hi = min(lo, sum[k]/float64(n[k])), max(hi, sum[k]/float64(n[k]))
		}
		best = min(best, hi-lo)
	}
	try(0)
	return best, !math.IsInf(best, 1)
}

// The look-ahead and the balance in shapes of two teams with role compositions, which
// TestShapedPartiesChosenForTheirTeamsAreNeverLessEven leaves out and TestShapedAgainstBruteForce
// fills with parties of two at most: random small queues of two teams of 2-4 (a tank in
// each, at most one healer, sometimes different sizes) with parties up to a team's size,
// each player listing some of the roles (a party whose roles fit no team lists none, as the
// service would refuse it), the rules of WithRules in a third. Every match keeps the shape,
// the compositions, the rules and the balance, nobody is matched twice (checkMatches), and
// the oldest ticket is matched whenever some set of tickets acceptable to it makes a valid
// match with it (the brute force knows the balance).
func TestShapedRolePartiesKeepTheRulesTheBalanceAndTheOldest(t *testing.T) {
	t.Parallel()
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	rng := rand.New(rand.NewPCG(23, 29))
	withParty, bigParty, turnedDown := 0, 0, 0
	for run := range runs {
		tk, cfg := randomRoleParties(rng)
		res, err := Run(tk, 60, cfg)
		if err != nil {
			t.Fatalf("run %d: %v\nconfig %+v\ntickets %+v", run, err, cfg, tk)
		}
		ref := shapedRef{tk: tk, cfg: cfg, now: 60}
		if msg := ref.checkMatches(res.Matches); msg != "" {
			t.Fatalf("run %d: %s\nconfig %+v\ntickets %+v\nmatches %+v", run, msg, cfg, tk, res.Matches)
		}
		if o := ref.oldest(); ref.matchExists(o) && !slices.ContainsFunc(res.Matches, func(m matchpool.Match) bool { return slices.Contains(m.Tickets, o) }) {
			t.Fatalf("run %d: the oldest ticket %d has a match and waits (%+v)\nconfig %+v\ntickets %+v\nmatches %+v",
				run, o, res.Waiting, cfg, tk, res.Matches)
		}
		for _, m := range res.Matches {
			largest := 0
			for _, i := range m.Tickets {
				largest = max(largest, len(tk[i].Ratings))
			}
			if largest > 1 {
				withParty++
			}
			if largest > 2 {
				bigParty++
			}
		}
		if slices.ContainsFunc(res.Waiting, func(w matchpool.Wait) bool { return w.Rule == matchrules.WaitTeams && w.Found }) {
			turnedDown++
		}
	}
	if withParty < runs/10 || bigParty < runs/50 || turnedDown < runs/100 {
		t.Fatalf("in %d runs, %d matches with a party, %d with one of 3 or more, %d runs with a match turned down on the balance: the test hardly tests",
			runs, withParty, bigParty, turnedDown)
	}
	t.Logf("in %d runs, %d matches with a party, %d with one of 3 or more, %d runs with a match turned down on the balance",
		runs, withParty, bigParty, turnedDown)
}

// randomRoleParties is a small queue (4-7 tickets) of two teams with role compositions and
// parties up to a team's size, for TestShapedRolePartiesKeepTheRulesTheBalanceAndTheOldest.
func randomRoleParties(rng *rand.Rand) ([]matchpool.Ticket, matchrules.Config) {
	cfg := matchrules.Config{Interval: []matchrules.Step{{AfterS: 0, Value: float64(10 * rng.IntN(6))}, {AfterS: 30, Value: 100}}}
	if rng.IntN(2) == 0 {
		cfg.Interval = cfg.Interval[:1]
	}
	cfg.Roles = []string{"tank", "healer", "dps"}
	comp := map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}, "healer": {Min: 0, Max: 1}}
	size := 2 + rng.IntN(3)
	other := size
	if rng.IntN(4) == 0 {
		other = max(2, size-1)
	}
	cfg.Shape = []matchrules.TeamDef{{Size: size, Composition: comp}, {Size: other, Composition: comp}}
	cfg.TeamSize = size
	tk := make([]matchpool.Ticket, 4+rng.IntN(4))
	for i := range tk {
		x := matchpool.Ticket{WaitingSince: float64(rng.IntN(60)), ExpiresAt: math.Inf(1)}
		for n := 1 + rng.IntN(size); len(x.Ratings) < n; {
			x.Ratings = append(x.Ratings, float64(rng.IntN(60))+rng.Float64()/1000)
			var rs []string
			for _, r := range cfg.Roles {
				if rng.IntN(2) == 0 {
					rs = append(rs, r)
				}
			}
			x.Roles = append(x.Roles, rs)
		}
		if !cfg.PartyFits(x.Roles) {
			x.Roles = nil // the service refuses such a party (TestShapedTicketValidation)
		}
		tk[i] = x
	}
	if rng.IntN(3) == 0 {
		tk, cfg = testqueue.WithRules(rng, tk, cfg)
	}
	return tk, cfg
}
