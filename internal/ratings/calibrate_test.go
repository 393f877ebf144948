package ratings

import (
	"math"
	"math/rand/v2"
	"testing"
)

// learnTemperature runs n results through a side pair's temperature as a model does: each
// result's logit z is drawn by draw, its outcome from sigmoid(truth z), and T's sums take
// the result served with the T learnt so far.
func learnTemperature(fn func(BiasCell, float64) (float64, float64), n int, truth float64, draw func(*rand.Rand) float64) float64 {
	rng := rand.New(rand.NewPCG(7, 11))
	var c BiasCell
	for range n {
		t, weight := fn(c, DefaultScalePrior)
		z := draw(rng)
		g := 0.0
		if rng.Float64() < sigmoid(truth*z) {
			g = 1
		}
		s, sw := scaleTerms(z, g, t, weight)
		c.Games++
		c.Wins += g
		c.Terms.Scale += s
		c.Terms.ScaleWeight += sw
	}
	t, _ := fn(c, DefaultScalePrior)
	return t
}

// A model that predicts every match near 1/2 (|z| about 0.2: newcomers in big teams) while
// the outcomes say the logit is twice z: counted in information, the temperature's prior
// lets 3,000 results show it; counted in results it holds T near 1, the served
// probabilities as timid as the model's.
func TestTemperatureByInformationFollowsTimidModels(t *testing.T) {
	timid := func(rng *rand.Rand) float64 { return 0.2 * rng.NormFloat64() }
	byInfo := learnTemperature(temperatureByInformation, 3000, 2, timid)
	byResults := learnTemperature(temperature, 3000, 2, timid)
	if byInfo < 1.6 || byInfo > 2.4 {
		t.Errorf("T by information %.3f after 3,000 results of truth 2, want 1.6..2.4", byInfo)
	}
	if byResults > 1.45 {
		t.Errorf("T by results %.3f: the check no longer tells the priors apart", byResults)
	}
	// Where predictions are confident (|z| about 2), both follow a truth of 0.6.
	bold := func(rng *rand.Rand) float64 { return 2 * rng.NormFloat64() }
	for name, fn := range map[string]func(BiasCell, float64) (float64, float64){"information": temperatureByInformation, "results": temperature} {
		if got := learnTemperature(fn, 3000, 0.6, bold); math.Abs(got-0.6) > 0.1 {
			t.Errorf("T by %s %.3f after 3,000 confident results of truth 0.6, want 0.6 +- 0.1", name, got)
		}
	}
	t.Logf("timid: T by information %.3f, by results %.3f", byInfo, byResults)
}

// Results whose logit was 0 (a context's first matches of newcomers, even teams) carry no
// information: the prior still holds T at 1, finite.
func TestTemperatureByInformationWithoutInformation(t *testing.T) {
	for _, games := range []float64{0, 1, 50} {
		c := BiasCell{Games: games, Wins: games / 2}
		if got, _ := temperatureByInformation(c, DefaultScalePrior); got != 1 {
			t.Errorf("%g games without information: T %v, want 1", games, got)
		}
	}
	// One informative result after 50 without: T moves, but by no more than the prior of
	// 20 results of minScaleInformation allows.
	c := BiasCell{Games: 51, Wins: 26}
	s, sw := scaleTerms(1, 1, 1, 51*51)
	c.Terms.Scale, c.Terms.ScaleWeight = s, sw
	got, _ := temperatureByInformation(c, DefaultScalePrior)
	if math.IsNaN(got) || got < 1 || got > 1.5 {
		t.Errorf("after one informative result: T %v, want in 1..1.5", got)
	}
}
