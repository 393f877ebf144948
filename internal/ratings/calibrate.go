package ratings

// Calibration. A model's win probability is sigmoid(z) for its logit z; what a model serves is
// sigmoid(T z), T a temperature learnt from the context's own results, so that the served
// probability stays calibrated whatever the data: the outcomes regressed on the logit of the
// served probability have a slope near 1. T is the iteratively reweighted least-squares
// estimate of the slope of the outcome on z: each result is a pseudo-observation
// T_used + (g - p) / (p (1 - p) z) of it with weight p (1 - p) z^2, and the n-th result of the
// side pair is weighted (n + 1)^2 more, so that the early results, predicted by a model that
// knew little, are forgotten as it learns. The sums live in the bias table (Terms.Scale,
// ScaleWeight), additive like its win counts. T starts at 1 with the weight prior times the
// current result's weight: about prior / (n / 3) of the estimate.

// DefaultScalePrior is the temperature prior's weight of every model that calibrates.
const DefaultScalePrior = 20

// temperature is the learnt T for a result filed under a cell whose side pair's total is c,
// and this result's weight in T's sums.
func temperature(c BiasCell, prior float64) (t, weight float64) {
	n := c.Games + 1
	weight = n * n
	t, _ = estimate(1, prior*weight, c.Terms.Scale, c.Terms.ScaleWeight)
	return t, weight
}

// scaleTerms is a result's part in T's sums: it served sigmoid(t z) and the outcome was g.
func scaleTerms(z, g, t, weight float64) (scale, scaleWeight float64) {
	p := sigmoid(t * z)
	h := p * (1 - p)
	return weight * (h*z*z*t + (g-p)*z), weight * h * z * z
}

// estimate is a learnt term's current value and variance: its prior (value, weight)
// combined with the pseudo-observations summed so far.
func estimate(prior, priorWeight, sum, weight float64) (value, variance float64) {
	return (priorWeight*prior + sum) / (priorWeight + weight), 1 / (priorWeight + weight)
}
