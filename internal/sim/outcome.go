package sim

import (
	"math"
	"math/rand/v2"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
)

// ThesisWeights are the outcome model's weights, fitted to the thesis's Tables 8.1 and 8.2
// (see the package documentation for how). They have the form of eq. 6.5's coefficients, so
// a player's true skill is skill.Rating(stats, ThesisWeights) / 1000 logits: the
// truth is a rating the queue could compute, if it knew the weights.
var ThesisWeights = skill.Coefficients{Accuracy: 5.1685, ReactionTime: 4.2570, Awareness: -1.1724, Movement: -0.7310}

// TrueSkill is a player's hidden skill under weights, in logits of a round.
func TrueSkill(s skill.Stats, weights skill.Coefficients) float64 {
	return skill.Rating(s, weights) / 1000
}

// RoundProbability is the probability that a team of mean true skill mean0 wins a round
// against a team of mean skill mean1: the logistic (Bradley-Terry) link on team strength.
func RoundProbability(mean0, mean1 float64) float64 {
	return 1 / (1 + math.Exp(mean1-mean0))
}

// PlayRounds plays a match of the given number of rounds, each won by team 0 with
// probability p independently, and returns the rounds won by each team.
func PlayRounds(rng *rand.Rand, p float64, rounds int) [2]int {
	won := 0
	for range rounds {
		if rng.Float64() < p {
			won++
		}
	}
	return [2]int{won, rounds - won}
}

// MatchWinProbability is the probability that team 0 wins more than half of the rounds when
// it wins each with probability p; a tie (possible when rounds is even) counts a half.
func MatchWinProbability(p float64, rounds int) float64 {
	win := 0.0
	for k := 0; k <= rounds; k++ {
		pk := binomial(rounds, k, p)
		switch {
		case 2*k > rounds:
			win += pk
		case 2*k == rounds:
			win += pk / 2
		}
	}
	return win
}

// OneSided reports whether a team won more than 70% of the rounds: the thesis's measure of a
// one-sided match (Table 8.4: 8 or more of 11).
func OneSided(won [2]int) bool {
	total := won[0] + won[1]
	return 10*max(won[0], won[1]) > 7*total
}

// OneSidedProbability is the probability that a match of the given rounds, each won by
// team 0 with probability p, is one-sided.
func OneSidedProbability(p float64, rounds int) float64 {
	s := 0.0
	for k := 0; k <= rounds; k++ {
		if OneSided([2]int{k, rounds - k}) {
			s += binomial(rounds, k, p)
		}
	}
	return s
}

// binomial is P(X = k) for X ~ Binomial(n, p).
func binomial(n, k int, p float64) float64 {
	c := 1.0
	for i := range k {
		c = c * float64(n-i) / float64(i+1)
	}
	return c * math.Pow(p, float64(k)) * math.Pow(1-p, float64(n-k))
}
