package evaluate

import (
	"fmt"
	"math"
)

// Score accumulates predictions of team 0 winning against what happened. The zero Score is
// empty and ready to use.
type Score struct {
	n, decisive     int
	logLoss, brier  float64
	correct         float64
	logits, results []float64 // for the calibration slope
}

// Add records one prediction p (team 0's win probability) and the outcome g: 1 if team 0 won,
// 0 if it lost, 1/2 for a draw.
func (s *Score) Add(p, g float64) {
	p = min(max(p, 1e-15), 1-1e-15)
	s.n++
	s.logLoss -= g*math.Log(p) + (1-g)*math.Log(1-p)
	s.brier += (p - g) * (p - g)
	if g != 0.5 {
		s.decisive++
		switch {
		case p == 0.5:
			s.correct += 0.5
		case (p > 0.5) == (g == 1):
			s.correct++
		}
	}
	s.logits = append(s.logits, math.Log(p/(1-p)))
	s.results = append(s.results, g)
}

// Metrics are a model's scores over the scored results.
type Metrics struct {
	N        int     // results scored
	Accuracy float64 // share of decisive results whose winner had p > 1/2 (p = 1/2 counts half)
	LogLoss  float64 // mean of -(g ln p + (1-g) ln(1-p)), natural log
	Brier    float64 // mean of (p - g)^2
	// Slope is the calibration slope: b in the logistic regression g ~ sigmoid(a + b logit p).
	// 1 is calibrated; above 1 the predictions are underconfident (reality is more extreme
	// than they say), below 1 overconfident. NaN when it cannot be fitted.
	Slope float64
	// Rescaled and Recalibrated bound what calibrating these predictions could buy: the log
	// loss of sigmoid(b logit p), and of sigmoid(a + b logit p), with a and b fitted in
	// hindsight to the very outcomes scored. No temperature (one b for the whole history, as
	// every model's learnt T is online) can score below Rescaled, no recalibration of the
	// logit below Recalibrated; what is left above them is the predictions' ranking of the
	// matches, which only the model's learning changes. NaN when they cannot be fitted.
	Rescaled, Recalibrated float64
}

// Metrics computes the scores. The slope is fitted by Newton's method on the log likelihood
// (draws enter as half a win, a quasi-likelihood).
func (s *Score) Metrics() Metrics {
	if s.n == 0 {
		return Metrics{Accuracy: math.NaN(), LogLoss: math.NaN(), Brier: math.NaN(), Slope: math.NaN()}
	}
	m := Metrics{N: s.n, LogLoss: s.logLoss / float64(s.n), Brier: s.brier / float64(s.n), Accuracy: math.NaN()}
	if s.decisive > 0 {
		m.Accuracy = s.correct / float64(s.decisive)
	}
	a, b := logisticFit(s.logits, s.results)
	m.Slope = b
	m.Recalibrated = s.fittedLoss(a, b)
	m.Rescaled = s.fittedLoss(0, scaleFit(s.logits, s.results))
	return m
}

// fittedLoss is the mean log loss of the predictions recalibrated to sigmoid(a + b logit p).
func (s *Score) fittedLoss(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	var sum float64
	for i, x := range s.logits {
		z := a + b*x
		// -(g ln sigmoid(z) + (1-g) ln sigmoid(-z)), with ln sigmoid(z) = -log1p(e^-z).
		sum += s.results[i]*softplus(-z) + (1-s.results[i])*softplus(z)
	}
	return sum / float64(len(s.logits))
}

// softplus is ln(1 + e^z), without overflow for large z.
func softplus(z float64) float64 {
	if z > 30 {
		return z
	}
	return math.Log1p(math.Exp(z))
}

// scaleFit fits g ~ sigmoid(b x) by maximum likelihood (Newton's method from b = 1), NaN when
// the data cannot determine it.
func scaleFit(x, g []float64) float64 {
	b := 1.0
	for range 100 {
		var grad, hess float64
		for i, xi := range x {
			p := 1 / (1 + math.Exp(-b*xi))
			grad += (g[i] - p) * xi
			hess += p * (1 - p) * xi * xi
		}
		if !(hess > 0) {
			return math.NaN()
		}
		step := grad / hess
		b += step
		if math.Abs(step) < 1e-12 {
			return b
		}
		if math.IsNaN(b) || math.Abs(b) > 1e6 {
			break
		}
	}
	return math.NaN()
}

// logisticFit fits g ~ sigmoid(a + b x) by maximum likelihood (Newton's method on the 2x2
// system), returning NaNs when the data cannot determine it (no spread in x, or separation).
func logisticFit(x, g []float64) (a, b float64) {
	for range 100 {
		var ga, gb, haa, hab, hbb float64
		for i, xi := range x {
			p := 1 / (1 + math.Exp(-(a + b*xi)))
			w := p * (1 - p)
			d := g[i] - p
			ga += d
			gb += d * xi
			haa += w
			hab += w * xi
			hbb += w * xi * xi
		}
		det := haa*hbb - hab*hab
		if !(det > 1e-12*haa*hbb) {
			return math.NaN(), math.NaN()
		}
		da := (hbb*ga - hab*gb) / det
		db := (haa*gb - hab*ga) / det
		a += da
		b += db
		if math.Abs(da) < 1e-12 && math.Abs(db) < 1e-12 {
			return a, b
		}
		if math.IsNaN(a) || math.IsNaN(b) || math.Abs(b) > 1e6 {
			break
		}
	}
	return math.NaN(), math.NaN()
}

// String renders the metrics as one table row after the model's name.
func (m Metrics) String() string {
	return fmt.Sprintf("%6d  %8.4f  %8.4f  %6.4f  %5.3f", m.N, m.Accuracy, m.LogLoss, m.Brier, m.Slope)
}
