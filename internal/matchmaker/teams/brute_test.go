package teams

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The reference: every split, the way the seed's program goes through them, with nothing
// clever. Teams have no names, so a split is a partition of the players into at most t
// groups; listing the team of each player as a "restricted growth string" (player 0 in team
// 0, each player in a team already used or the next new one) visits each partition once,
// which is the seed's "no need to go through them twice" generalised to t teams.

// bruteSplit is one split found by brute force.
type bruteSplit struct {
	score  float64
	totals []float64
}

// brute lists every allowed split of w into t teams, scored, best first.
func brute(w []float64, t int, bots *BotRule, maxHumans int, obj Objective) []bruteSplit {
	n := len(w)
	assign := make([]int, n)
	var out []bruteSplit
	var rec func(i, used int)
	rec = func(i, used int) {
		if i == n {
			count := make([]int, t)
			sums := make([]float64, t)
			for k, j := range assign {
				count[j]++
				sums[j] += w[k]
			}
			lo, hi := slices.Min(count), slices.Max(count)
			if bots == nil && hi-lo > 1 || bots != nil && hi > maxHumans {
				return
			}
			if bots != nil {
				per := bots.MinPlayers(hi, t) / t
				for j := range sums {
					sums[j] += float64(per-count[j]) * bots.MeanWeight
				}
			}
			out = append(out, bruteSplit{scoreOf(obj, sums), sums})
			return
		}
		for j := 0; j <= used && j < t; j++ {
			assign[i] = j
			rec(i+1, max(used, j+1))
		}
	}
	rec(0, 0)
	slices.SortStableFunc(out, func(a, b bruteSplit) int {
		switch {
		case a.score < b.score:
			return -1
		case a.score > b.score:
			return 1
		}
		return 0
	})
	return out
}

// randomWeights draws weights of several shapes: integers 0..100 (many ties, zeros),
// uniform reals, and a few heavy players among light ones.
func randomWeights(rng *rand.Rand, n int) []float64 {
	w := make([]float64, n)
	shape := rng.IntN(3)
	for i := range w {
		switch shape {
		case 0:
			w[i] = float64(rng.IntN(101))
		case 1:
			w[i] = rng.Float64() * 100
		default:
			w[i] = math.Round(rng.ExpFloat64()*300) / 10
		}
	}
	return w
}

// randomOptions draws a split request for n players.
func randomOptions(rng *rand.Rand, n, teams int) SplitOptions {
	o := SplitOptions{Teams: teams, Candidates: 1 + rng.IntN(7)}
	if rng.IntN(3) > 0 {
		lo := rng.IntN(10)
		o.Bots = &BotRule{
			MeanWeight:     float64(rng.IntN(80)),
			TargetPlayers:  rng.IntN(16),
			RecommendedMin: lo,
			RecommendedMax: lo + rng.IntN(10),
		}
		if rng.IntN(2) == 0 {
			ceil := (n + o.Teams - 1) / o.Teams
			o.MaxHumansPerTeam = ceil + rng.IntN(n-ceil+1)
		}
	}
	switch rng.IntN(3) {
	case 0:
		o.Objective = Ratio
	case 1:
		o.Objective = Difference
	}
	return o
}

// checkResult checks that every candidate is a valid split of n players under the
// settings the result reports, with totals that add up.
func checkResult(t *testing.T, w []float64, o SplitOptions, r SplitResult) {
	t.Helper()
	if len(r.Candidates) == 0 || r.Chosen < 0 || r.Chosen >= len(r.Candidates) {
		t.Fatalf("chosen %d of %d candidates", r.Chosen, len(r.Candidates))
	}
	if !slices.EqualFunc(r.Teams, r.Candidates[r.Chosen].Teams, func(a, b Team) bool {
		return slices.Equal(a.Players, b.Players) && a.Bots == b.Bots && a.Total == b.Total
	}) {
		t.Fatalf("the chosen split is not candidate %d", r.Chosen)
	}
	for ci, c := range r.Candidates {
		if len(c.Teams) != o.Teams {
			t.Fatalf("candidate %d has %d teams, want %d", ci, len(c.Teams), o.Teams)
		}
		seen := make([]bool, len(w))
		totals := make([]float64, o.Teams)
		sizes := make([]int, o.Teams)
		for j, team := range c.Teams {
			sum := 0.0
			for _, i := range team.Players {
				if i < 0 || i >= len(w) || seen[i] {
					t.Fatalf("candidate %d: player %d missing, repeated or out of range", ci, i)
				}
				seen[i] = true
				sum += w[i]
			}
			if team.Bots < 0 || o.Bots == nil && team.Bots != 0 {
				t.Fatalf("candidate %d team %d: %d bots", ci, j, team.Bots)
			}
			if o.Bots != nil {
				sum += float64(team.Bots) * o.Bots.MeanWeight
			}
			if math.Abs(sum-team.Total) > 1e-9*(1+math.Abs(sum)) {
				t.Fatalf("candidate %d team %d: total %v, players and bots add up to %v", ci, j, team.Total, sum)
			}
			if len(team.Players) > r.MaxHumans {
				t.Fatalf("candidate %d team %d: %d humans over the cap %d", ci, j, len(team.Players), r.MaxHumans)
			}
			totals[j] = team.Total
			sizes[j] = len(team.Players) + team.Bots
		}
		if slices.Contains(seen, false) {
			t.Fatalf("candidate %d leaves a player out", ci)
		}
		if o.Bots == nil && slices.Max(sizes)-slices.Min(sizes) > 1 {
			t.Fatalf("candidate %d: sizes %v differ by more than one", ci, sizes)
		}
		if o.Bots != nil {
			largest := 0
			for _, team := range c.Teams {
				largest = max(largest, len(team.Players))
			}
			per := o.Bots.MinPlayers(largest, o.Teams) / o.Teams
			for j, s := range sizes {
				if s != per {
					t.Fatalf("candidate %d team %d has %d players, the bot rule says %d", ci, j, s, per)
				}
			}
		}
		bal, diff := Balance(totals)
		if math.Abs(bal-c.Balance) > 1e-12 || math.Abs(diff-c.Difference) > 1e-9*(1+diff) {
			t.Fatalf("candidate %d reports balance %v difference %v, totals give %v %v", ci, c.Balance, c.Difference, bal, diff)
		}
		if bal < 0 || bal > 1 {
			t.Fatalf("candidate %d balance %v outside [0,1]", ci, bal)
		}
		// Teams are listed by first player, so the same split always reads the same.
		for cj := range ci {
			if slices.EqualFunc(c.Teams, r.Candidates[cj].Teams, func(a, b Team) bool {
				return slices.Equal(a.Players, b.Players)
			}) {
				t.Fatalf("candidates %d and %d are the same split", cj, ci)
			}
		}
	}
}

func candScores(r SplitResult) []float64 {
	var s []float64
	for _, c := range r.Candidates {
		totals := make([]float64, len(c.Teams))
		for j, t := range c.Teams {
			totals[j] = t.Total
		}
		s = append(s, scoreOf(r.Objective, totals))
	}
	return s
}

// The exact searches return the same best scores as brute force, candidate for candidate,
// on thousands of random small instances: 2, 3 and 4 teams, with and without bots and caps,
// both objectives. "random" draws weights of several shapes, integers full of ties among
// them. "ties" draws instances made of ties -- every weight equal, two values, mostly zeros,
// repeated powers of two, whole numbers in a narrow band -- and asks for up to MaxCandidates
// candidates, which the many equally good splits must fill: skipping what can at best tie
// the k-th candidate (problem.open) must change no answer.
func TestSplitExactMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances int
		seed      uint64
		weights   func(*rand.Rand, int) []float64
		maxK      int // 0: randomOptions' choice
	}{
		{"random", 3000, 1, randomWeights, 0},
		{"ties", 1500, 3, tiedWeights, MaxCandidates},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			instances := tc.instances
			if testing.Short() {
				instances /= 10
			}
			rng := rand.New(rand.NewPCG(tc.seed, tc.seed+1))
			for it := range instances {
				teams := 2 + rng.IntN(3)
				n := 1 + rng.IntN([...]int{2: 14, 3: 10, 4: 8}[teams])
				o := randomOptions(rng, n, teams)
				if tc.maxK > 0 {
					o.Candidates = 1 + rng.IntN(tc.maxK)
				}
				checkAgainstBruteForce(t, it, tc.weights(rng, n), o)
			}
		})
	}
}

// tiedWeights draws weights that make many splits score the same.
func tiedWeights(rng *rand.Rand, n int) []float64 {
	w := make([]float64, n)
	shape, a, b := rng.IntN(5), float64(rng.IntN(101)), float64(rng.IntN(101))
	for i := range w {
		switch shape {
		case 0: // all equal, 0 included
			w[i] = a
		case 1: // two values
			w[i] = [2]float64{a, b}[rng.IntN(2)]
		case 2: // mostly zeros
			w[i] = float64(rng.IntN(3) / 2 * rng.IntN(101))
		case 3: // powers of two, repeated: distinct sums but for the repeats
			w[i] = math.Ldexp(1, rng.IntN(8))
		default: // whole numbers in a narrow band
			w[i] = float64(45 + rng.IntN(11))
		}
	}
	return w
}

// checkAgainstBruteForce splits w as o asks, exactly, and checks the candidates' scores
// against brute force's best, and the heuristic's against them.
func checkAgainstBruteForce(t *testing.T, it int, w []float64, o SplitOptions) {
	t.Helper()
	n := len(w)
	name := fmt.Sprintf("instance %d: n=%d teams=%d bots=%+v cap=%d k=%d obj=%q w=%v",
		it, n, o.Teams, o.Bots, o.MaxHumansPerTeam, o.Candidates, o.Objective, w)
	r, err := Split(w, o)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !r.Exact {
		t.Fatalf("%s: not exact", name)
	}
	checkResult(t, w, o, r)
	want := brute(w, o.Teams, o.Bots, r.MaxHumans, r.Objective)
	got := candScores(r)
	if len(got) != min(wantK(o), len(want)) {
		t.Fatalf("%s: %d candidates, want %d of %d splits", name, len(got), min(wantK(o), len(want)), len(want))
	}
	scale := 1.0
	if r.Objective == Difference {
		scale += want[len(want)-1].totals[0] + slices.Max(w)*float64(n)
	}
	for i := range got {
		if math.Abs(got[i]-want[i].score) > 1e-9*scale {
			t.Fatalf("%s: candidate %d scores %v, brute force %v (all: %v)", name, i, got[i], want[i].score, got)
		}
	}

	// The heuristic on the same problem: valid, distinct splits, none better than the
	// optimum (a check on how it scores), none better than brute force's i-th.
	st, _ := o.validate(w)
	p := newSplitProblem(w, st)
	top := &shortlist{k: st.k, sym: true, dedupe: true}
	p.heuristic(top)
	h := splitResult(p, st, top, false)
	checkResult(t, w, o, h)
	for i, sc := range candScores(h) {
		if sc < want[i].score-1e-9*scale {
			t.Fatalf("%s: heuristic candidate %d scores %v, better than brute force's %v", name, i, sc, want[i].score)
		}
	}
}

// wantK is the number of candidates asked for.
func wantK(o SplitOptions) int {
	if o.Candidates == 0 {
		return DefaultCandidates
	}
	return o.Candidates
}
