package ratings

import (
	"errors"
	"math"
)

// Mixture serves the Bayesian average of two models that both learn from every result of a
// context: ns2-kalman (First), whose team is the mean of its players, and openskill-pl
// (Second), whose team is their sum. Neither model is changed by the other; what is served is
//
//	p = w p_first + (1 - w) p_second,  w = sigmoid(E / (n+1)^Memory),
//
// E the side pair's evidence for the first model over the second: the sum over its n results
// so far of (i+1)^Memory (ln q_first,i - ln q_second,i), q being the probability each served
// for the outcome that happened. With Memory 0 it is Bayesian model averaging, whose
// cumulative log loss is within ln 2 nats of the better model's over the whole history; more
// weighs the recent results more, so that w follows the model that is the better now. E is one
// more additive sum of the side pair's (Terms.Evidence), as the temperature's are; the second
// model's temperature has its own (AltScale, AltScaleWeight) and its belief lives in
// Rating.AltSkill and AltSigma. What is read of a rating -- skill, uncertainty, weight, the
// smurf detector -- is the first model's: the mixture changes only the served probability.
// docs/ratings.md ("Short histories") has the measurements.
type Mixture struct {
	First  Kalman
	Second WengLin
	// Memory is the exponent of the results' weights in the evidence (see Mixture).
	Memory float64
}

// DefaultMixture is the two models' defaults, Memory 0.5.
func DefaultMixture() Mixture {
	return Mixture{First: DefaultKalman(), Second: DefaultWengLin(true), Memory: 0.5}
}

// Name is "ns2-mix".
func (Mixture) Name() string { return "ns2-mix" }

// PriorSigma is the first model's.
func (m Mixture) PriorSigma() float64 { return m.First.PriorSigma() }

// Validate checks both models' parameters and Memory (finite, non-negative).
func (m Mixture) Validate() error {
	return errors.Join(m.First.Validate(), m.Second.Validate(), validateParams(param{"memory", m.Memory, false}))
}

// Apply learns from one result (see Model): the first model from prior and bias as it would
// alone, the second from the ratings' Alt fields and the side pair's AltScale sums.
func (m Mixture) Apply(prior map[Participant]Rating, bias BiasTable, r Result) (Outcome, error) {
	if err := validateParams(param{"memory", m.Memory, false}); err != nil {
		return Outcome{}, err
	}
	o, err := m.First.Apply(prior, bias, r)
	if err != nil {
		return Outcome{}, err
	}
	second := make(map[Participant]Rating, len(o.Updates))
	for _, u := range o.Updates {
		second[u.Participant] = Rating{Skill: u.Before.AltSkill, Sigma: u.Before.AltSigma}
	}
	pair := bias.Total(o.BiasUpdate.Key)
	alt := pair
	alt.Terms.Scale, alt.Terms.ScaleWeight = pair.Terms.AltScale, pair.Terms.AltScaleWeight
	so, err := m.Second.apply(second, func(BiasKey) BiasCell { return alt }, r)
	if err != nil {
		return Outcome{}, err
	}
	weight := math.Pow(pair.Games+1, m.Memory)
	w := sigmoid(pair.Terms.Evidence / weight)
	first, sec := o.WinProbability[0], so.WinProbability[0]
	p := w*first + (1-w)*sec

	g := r.Score()
	t := &o.BiasUpdate.Terms
	t.AltScale, t.AltScaleWeight = so.BiasUpdate.Terms.Scale, so.BiasUpdate.Terms.ScaleWeight
	t.Evidence = weight * (logLikelihood(first, g) - logLikelihood(sec, g))
	for i := range o.Updates {
		a := &o.Updates[i].After
		a.AltSkill, a.AltSigma = so.Updates[i].After.Skill, so.Updates[i].After.Sigma
	}
	o.WinProbability = [2]float64{p, 1 - p}
	return o, nil
}

// logLikelihood is the log of the probability p gave team 0's outcome g (a draw: half of
// each), p kept off 0 and 1 so that one confident miss cannot make the evidence infinite.
func logLikelihood(p, g float64) float64 {
	p = min(max(p, 1e-15), 1-1e-15)
	return g*math.Log(p) + (1-g)*math.Log(1-p)
}

// kalmanOf is the ns2-kalman a model predicts and learns ratings with: itself, or a
// Mixture's first model.
func kalmanOf(m Model) (Kalman, bool) {
	switch m := m.(type) {
	case Kalman:
		return m, true
	case Mixture:
		return m.First, true
	}
	return Kalman{}, false
}
