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
// current result's weight (ns2, openskill), or that times the mean information of a result
// so far (ns2-kalman: temperatureByInformation): about prior / (n / 3) of the estimate when
// each result carries as much as the prior's do. ns2 and openskill keep the first, with which
// their figures in docs/ratings.md were measured.

// DefaultScalePrior is the temperature prior's weight of every model that calibrates.
const DefaultScalePrior = 20

// temperatureByInformation is temperature with the prior's weight counted in information
// rather than in results, as ns2-kalman learns it: the prior is prior results each carrying
// the mean information p (1 - p) z^2 of the side pair's results so far (weighted as T's sums
// are), at least minScaleInformation. Counted in results, a prior of 20 outweighs hundreds of
// results whose z is small -- a short history of newcomers in big teams, predicted near 1/2 --
// and T stays near 1 whatever the outcomes say: served probabilities too timid, or too bold
// where the model starts overconfident (a history of fixed teams). docs/ratings.md ("Short
// histories") has the figures.
func temperatureByInformation(c BiasCell, prior float64) (t, weight float64) {
	n := c.Games + 1
	weight = n * n
	info := 1.0
	if g := c.Games; g > 0 {
		info = max(c.Terms.ScaleWeight/(g*(g+1)*(2*g+1)/6), minScaleInformation)
	}
	t, _ = estimate(1, prior*weight*info, c.Terms.Scale, c.Terms.ScaleWeight)
	return t, weight
}

// minScaleInformation bounds the information a prior result is counted with: the first
// matches of a context of newcomers have z = 0 and carry none, and T must not follow the
// first result that does.
const minScaleInformation = 0.02

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
