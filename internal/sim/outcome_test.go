package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
)

// baselineTest is one row of the thesis's Tables 8.1 and 8.2: the stat difference x (team 1
// minus team 2, each stat oriented so that larger is better: 1-accuracy, 1-reaction_time,
// awareness, movement) and the rounds each team won.
type baselineTest struct {
	name       string
	x          [4]float64
	win1, win2 float64
}

// thesisBaselineTests are Tables 8.1 (solo skill tests: one team very good, the other very
// bad in one stat, the rest equal) and 8.2 (versus tests), as the thesis prints them.
var thesisBaselineTests = []baselineTest{
	{"8.1 accuracy 0.1 vs 0.9", [4]float64{0.8, 0, 0, 0}, 20, 0},
	{"8.1 reaction time 0.1 vs 1.0", [4]float64{0, 0.9, 0, 0}, 20, 0},
	{"8.1 awareness 0.6 vs 0.0", [4]float64{0, 0, 0.6, 0}, 8, 12},
	{"8.1 movement 1.0 vs 0.0", [4]float64{0, 0, 0, 1}, 5, 15},
	{"8.2 accuracy vs reaction", [4]float64{0.8, -0.9, 0, 0}, 39, 21},
	{"8.2 accuracy vs movement", [4]float64{0.8, 0, 0, -1}, 60, 0},
	{"8.2 accuracy vs awareness", [4]float64{0.8, 0, -0.6, 0}, 60, 0},
	{"8.2 reaction vs movement", [4]float64{0, -0.9, 0, 1}, 0, 60},
	{"8.2 reaction vs awareness", [4]float64{0, -0.9, 0.6, 0}, 0, 60},
	{"8.2 movement vs awareness", [4]float64{0, 0, 0.6, -1}, 29, 31},
	{"8.2 awareness+reaction vs awareness+accuracy", [4]float64{-0.8, 0.9, 0, 0}, 22, 38},
	{"8.2 movement+accuracy vs movement+reaction", [4]float64{0.8, -0.9, 0, 0}, 27, 33},
}

// fitWeights is the maximum-likelihood logistic regression without intercept of the
// tests' rounds, every count increased by correction, by Newton's method.
func fitWeights(t *testing.T, tests []baselineTest, correction float64) [4]float64 {
	t.Helper()
	var w [4]float64
	for range 100 {
		grad := mat.NewVecDense(4, nil)
		hess := mat.NewSymDense(4, nil)
		for _, bt := range tests {
			won, n := bt.win1+correction, bt.win1+bt.win2+2*correction
			z := 0.0
			for i := range 4 {
				z += w[i] * bt.x[i]
			}
			p := 1 / (1 + math.Exp(-z))
			for i := range 4 {
				grad.SetVec(i, grad.AtVec(i)+(won-n*p)*bt.x[i])
				for j := i; j < 4; j++ {
					hess.SetSym(i, j, hess.At(i, j)+n*p*(1-p)*bt.x[i]*bt.x[j])
				}
			}
		}
		var step mat.VecDense
		if err := step.SolveVec(hess, grad); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			w[i] += step.AtVec(i)
		}
	}
	return w
}

// TestThesisWeightsAreTheFitOfTables81And82 redoes the fit the package documentation
// describes and checks that ThesisWeights are its result, and that the fitted model keeps
// the thesis's findings.
func TestThesisWeightsAreTheFitOfTables81And82(t *testing.T) {
	t.Parallel()
	w := fitWeights(t, thesisBaselineTests, 0.5)
	got := [4]float64{ThesisWeights.Accuracy, ThesisWeights.ReactionTime, ThesisWeights.Awareness, ThesisWeights.Movement}
	for i := range 4 {
		if math.Abs(w[i]-got[i]) > 1e-4 {
			t.Errorf("weight %d: ThesisWeights has %.4f, the fit gives %.5f", i, got[i], w[i])
		}
	}
	t.Logf("fit with +1/2: %.4f; with +1: %.4f", w, fitWeights(t, thesisBaselineTests, 1))

	// The model against every test: wherever a test is not a coin toss (more than 10 points
	// from 50%), the model favours the same team.
	for _, bt := range thesisBaselineTests {
		z := 0.0
		for i := range 4 {
			z += got[i] * bt.x[i]
		}
		model, observed := 1/(1+math.Exp(-z)), bt.win1/(bt.win1+bt.win2)
		t.Logf("%-46s model %5.1f%%  thesis %5.1f%%", bt.name, 100*model, 100*observed)
		if math.Abs(observed-0.5) > 0.1 && (model > 0.5) != (observed > 0.5) {
			t.Errorf("%s: the model gives team 1 %.2f, the thesis observed %.2f", bt.name, model, observed)
		}
	}
	// Accuracy and reaction time decisive, accuracy a little more; awareness and movement
	// minor (and, on their own, slightly harmful, as Table 8.1 found).
	acc, rt, aw, mv := got[0], got[1], got[2], got[3]
	if !(acc > rt && rt > 3*max(math.Abs(aw), math.Abs(mv))) {
		t.Errorf("weights %v: want accuracy > reaction time > 3 x |awareness|, |movement|", got)
	}
	if !(aw < 0 && mv < 0) {
		t.Errorf("weights %v: Table 8.1's high-awareness and high-movement teams lost more than they won", got)
	}
}

func TestTrueSkillIsEq65WithTheWeights(t *testing.T) {
	t.Parallel()
	s := skill.Stats{Accuracy: 0.1, ReactionTime: 0.9, Awareness: 0.6, Movement: 0}
	want := ThesisWeights.Accuracy*0.9 + ThesisWeights.ReactionTime*0.1 + ThesisWeights.Awareness*0.6
	if got := TrueSkill(s, ThesisWeights); math.Abs(got-want) > 1e-12 {
		t.Fatalf("TrueSkill = %v, want %v", got, want)
	}
}

func TestOneSidedIsMoreThan70PercentOfRounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		won  [2]int
		want bool
	}{
		{[2]int{11, 0}, true}, {[2]int{8, 3}, true}, {[2]int{3, 8}, true}, {[2]int{7, 4}, false},
		{[2]int{6, 5}, false}, {[2]int{7, 3}, false}, {[2]int{8, 2}, true}, {[2]int{1, 0}, true},
	} {
		if got := OneSided(tc.won); got != tc.want {
			t.Errorf("OneSided(%v) = %v, want %v", tc.won, got, tc.want)
		}
	}
}

// TestMatchProbabilitiesAgainstEnumeration checks MatchWinProbability and
// OneSidedProbability against every sequence of rounds.
func TestMatchProbabilitiesAgainstEnumeration(t *testing.T) {
	t.Parallel()
	for _, rounds := range []int{1, 2, 5, 10, 11} {
		for _, p := range []float64{0, 0.1, 0.5, 0.73, 1} {
			var win, one float64
			for seq := range 1 << rounds {
				k, prob := 0, 1.0
				for r := range rounds {
					if seq>>r&1 == 1 {
						k++
						prob *= p
					} else {
						prob *= 1 - p
					}
				}
				switch {
				case 2*k > rounds:
					win += prob
				case 2*k == rounds:
					win += prob / 2
				}
				if OneSided([2]int{k, rounds - k}) {
					one += prob
				}
			}
			if got := MatchWinProbability(p, rounds); math.Abs(got-win) > 1e-12 {
				t.Errorf("MatchWinProbability(%v, %d) = %v, want %v", p, rounds, got, win)
			}
			if got := OneSidedProbability(p, rounds); math.Abs(got-one) > 1e-12 {
				t.Errorf("OneSidedProbability(%v, %d) = %v, want %v", p, rounds, got, one)
			}
		}
	}
}

// TestOutcomeModelCalibration plays many matches between random 5-player teams of the
// thesis's population and checks, in bins of the model's round probability, that the
// stronger team wins as often as the model says: its share of rounds, of matches and the
// share of one-sided matches, each within four standard errors.
func TestOutcomeModelCalibration(t *testing.T) {
	t.Parallel()
	matches := 100_000
	if testing.Short() {
		matches = 40_000
	}
	rng := rand.New(rand.NewPCG(7, 7))
	pop := NewPopulation(PopulationConfig{Players: 1000, Accuracy: Uniform01, ReactionTime: Uniform01,
		Awareness: Uniform01, Movement: Uniform01}, ThesisWeights, rng)
	const bins, rounds = 10, 11
	type bin struct {
		n                               int
		p, pMatch, pOne                 float64 // sums of model probabilities
		roundsWon, matchesWon, oneSided float64 // sums of what happened
	}
	var bs [bins]bin
	for range matches {
		var mean [2]float64
		for side := range 2 {
			for range 5 {
				mean[side] += pop[rng.IntN(len(pop))].Skill / 5
			}
		}
		// Orient the match so that team 0 is the stronger one.
		p := RoundProbability(max(mean[0], mean[1]), min(mean[0], mean[1]))
		won := PlayRounds(rng, p, rounds)
		b := &bs[min(int((p-0.5)*2*bins), bins-1)]
		b.n++
		b.p += p
		b.pMatch += MatchWinProbability(p, rounds)
		b.pOne += OneSidedProbability(p, rounds)
		b.roundsWon += float64(won[0])
		if won[0] > won[1] {
			b.matchesWon++
		}
		if OneSided(won) {
			b.oneSided++
		}
	}
	check := func(i int, what string, observed, expected float64, n float64) {
		se := math.Sqrt(max(expected*(1-expected), 1e-4) / n)
		if math.Abs(observed-expected) > 4*se {
			t.Errorf("bin %d, %s: observed %.4f, the model says %.4f (4 se = %.4f)", i, what, observed, expected, 4*se)
		}
	}
	for i, b := range bs {
		if b.n < 100 {
			continue
		}
		n := float64(b.n)
		t.Logf("P(round) %.2f-%.2f: %6d matches; rounds %.3f (model %.3f); matches won %.3f (%.3f); one-sided %.3f (%.3f)",
			0.5+float64(i)/(2*bins), 0.5+float64(i+1)/(2*bins), b.n, b.roundsWon/(n*rounds), b.p/n,
			b.matchesWon/n, b.pMatch/n, b.oneSided/n, b.pOne/n)
		check(i, "share of rounds", b.roundsWon/(n*rounds), b.p/n, n*rounds)
		check(i, "share of matches", b.matchesWon/n, b.pMatch/n, n)
		check(i, "one-sided share", b.oneSided/n, b.pOne/n, n)
		if b.matchesWon/n <= 0.5 {
			t.Errorf("bin %d: the stronger team won %.3f of its matches", i, b.matchesWon/n)
		}
	}
}
