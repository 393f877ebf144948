package ratings

import (
	"math"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Kalman is the NS2 model's prediction with a Gaussian belief over each of its terms, learnt
// by assumed-density filtering: a Kalman filter for a logistic observation, Glicko or
// TrueSkill on the NS2 model's logit scale. Why this model and these defaults is in the
// package documentation (doc.go), the measurements behind them in docs/ratings.md.
//
// Prediction. As NS2 (see NS2 for t_i, c_i, sigma_i, T_i), team 0's logit is
//
//	x = sum_i T_i w_i (B + s_i) + sum_i sigma_0 w_i o_i + sum_i T_i u_i chi_i + F
//
// with w_i = t_i / sum t and u_i = c_i / sum c, but every term is uncertain: the skill s_i,
// offset o_i and commander skill chi_i are independent Gaussians (mean in Rating.Skill,
// Offset, Commander; standard deviation in Rating.Sigma, OffsetSigma, CommanderSigma), F's
// variance is that of the logit of its smoothed rate, and B's that of its estimate. So x is
// Gaussian with mean m and variance V = sum of (coefficient^2 x variance), and the
// probability that team 0 wins, averaged over that belief, is close to
//
//	p = sigmoid(m / sqrt(1 + pi V / 8))
//
// (MacKay's probit approximation): the less is known of the players, the closer to 1/2. The
// served win probability is sigmoid(T m / sqrt(1 + pi V / 8)), T a temperature learnt from the
// context's own results so that what is served stays calibrated whatever the data.
//
// Learning. Before a match each of its terms drifts (its variance grows by the drift squared),
// then the belief is updated by the result: the logistic likelihood is replaced by its closest
// probit, Phi(x sqrt(pi/8)), for which the posterior's mean and variance are exact, and the
// update is spread over the terms in proportion to coefficient x variance -- the rank-one
// Kalman update of a diagonal covariance. A newcomer (variance SkillSD^2) moves a lot, a
// veteran little. A draw is the Laplace step of half a win. Participants who were not there
// (w_i = 0) do not move.
//
// Context-wide terms. Three numbers are learnt from every result of a context (and side pair)
// by iteratively reweighted least squares on the result's residual, kept as additive sums in
// the bias table's Terms so that concurrent results never wait on each other:
//   - B, an average participant's worth over nobody: its feature is sum_i T_i w_i, which is 0
//     in an even match; it starts at BaseSkill with the weight BasePrior;
//   - the mean skill of a newcomer (a participant's first match): feature sum over newcomers
//     of T_i w_i; it starts at 0 with the weight NewcomerPrior;
//   - the temperature T (calibrate.go) of z = m / sqrt(1 + pi V / 8); it starts at 1 with
//     the weight ScalePrior.
type Kalman struct {
	// RoundS is the median round length of the participation weighting, as NS2.RoundS.
	RoundS float64
	// BaseSkill is B's prior value and BasePrior its weight (in units of sum h d^2 over
	// uneven matches, h = p(1-p) and d the presence difference sum T_i w_i).
	BaseSkill, BasePrior float64
	// SkillSD is a newcomer's skill uncertainty, SkillDrift how much it grows before each
	// match the participant plays (standard deviations, logit units as NS2's skill).
	SkillSD, SkillDrift float64
	// SkillDriftPerDay is how much it grows a day between the participant's matches (a
	// variance of SkillDriftPerDay^2 a day, from Rating.LastPlayed to the result's EndedAt):
	// a player back after months moves fast, and an idle one's conservative rating sinks.
	SkillDriftPerDay float64
	// OffsetSD is the prior uncertainty of a side offset, OffsetDrift its growth per match.
	OffsetSD, OffsetDrift float64
	// CommanderSD and CommanderDrift are the same for commander skills.
	CommanderSD, CommanderDrift float64
	// NewcomerSkill is the prior value of the newcomers' mean skill, NewcomerPrior its weight.
	NewcomerSkill, NewcomerPrior float64
	// Noise is the standard deviation of a match's performance beyond what the terms explain,
	// in logits: its square is added to the logit's variance V (0: none but the logistic's).
	Noise float64
	// ScalePrior is the weight of the temperature's prior (1), in results of the mean
	// information so far (temperatureByInformation).
	ScalePrior float64
	// The smurf detector: a participant in his first SmurfGames results is tested, result by
	// result, for being SmurfGap (logits) better than rated (Rating.Surprise, a CUSUM of the
	// log-likelihood ratio). Above half of SmurfLLR his skill's variance is raised back to the
	// newcomers' (SkillSD^2) before each match, so that he reaches his level in fewer games;
	// above SmurfLLR he is suspected (SuspectedSmurf: a flag on his rating, and a metric).
	// SmurfGames 0 turns it off.
	SmurfGames         int
	SmurfGap, SmurfLLR float64
	// SizeExponent weighs the players' terms of a match of n a side (skills, offsets, B, the
	// newcomers' mean) by (n/2)^SizeExponent in the logit: see sizeScale.
	SizeExponent float64
	// BiasPrior is k, the smoothing of the bias table (BiasTable.F).
	BiasPrior float64
}

// DefaultKalman returns the model with its default parameters.
func DefaultKalman() Kalman {
	return Kalman{BaseSkill: 4, BasePrior: 0.3, SkillSD: 2, SkillDrift: 0.1, SkillDriftPerDay: 0.02, OffsetSD: 0.3, CommanderSD: 1,
		CommanderDrift: 0.05, NewcomerPrior: 1, ScalePrior: DefaultScalePrior, BiasPrior: DefaultBiasPrior, SizeExponent: 0.5,
		SmurfGames: 30, SmurfGap: 4, SmurfLLR: 3}
}

// Name is "ns2-kalman".
func (Kalman) Name() string { return "ns2-kalman" }

// Validate checks the parameters: finite, and but for NewcomerSkill non-negative; SkillSD,
// the priors' weights and BiasPrior positive.
func (m Kalman) Validate() error {
	if !finite(m.NewcomerSkill) {
		return apperr.Field("newcomer_skill", "must be a finite number")
	}
	return validateParams(param{"round_s", m.RoundS, false}, param{"base_skill", m.BaseSkill, false},
		param{"base_prior", m.BasePrior, true}, param{"skill_sd", m.SkillSD, true}, param{"skill_drift", m.SkillDrift, false},
		param{"offset_sd", m.OffsetSD, false}, param{"offset_drift", m.OffsetDrift, false},
		param{"commander_sd", m.CommanderSD, false}, param{"commander_drift", m.CommanderDrift, false},
		param{"newcomer_prior", m.NewcomerPrior, true}, param{"noise", m.Noise, false}, param{"scale_prior", m.ScalePrior, true},
		param{"bias_prior", m.BiasPrior, true}, param{"size_exponent", m.SizeExponent, false},
		param{"smurf_gap", m.SmurfGap, false}, param{"smurf_llr", m.SmurfLLR, false}, param{"smurf_games", float64(m.SmurfGames), false})
}

// kalmanTerm is one Gaussian term of the prediction during an update.
type kalmanTerm struct {
	x, v float64 // coefficient in the logit, variance after the drift
}

// Apply learns from one result (see Model).
func (m Kalman) Apply(prior map[Participant]Rating, bias BiasTable, r Result) (Outcome, error) {
	var buf [32]matchEntry
	order, ups, err := prepare(m, prior, &r, buf[:0])
	if err != nil {
		return Outcome{}, err
	}
	sumT, sumC := shares(&r, order, ups, m.RoundS)

	entry, sigma0 := r.biasEntry()
	cell, pair := bias.Cell(entry.Key), bias.Total(entry.Key)
	total := pair.Terms
	base, baseVar := estimate(m.BaseSkill, m.BasePrior, total.Presence, total.PresenceWeight)
	newcomer, newcomerVar := estimate(m.NewcomerSkill, m.NewcomerPrior, total.Newcomer, total.NewcomerWeight)
	temp, weight := temperatureByInformation(pair, m.ScalePrior)

	size := sizeScale(r.teamSize(), m.SizeExponent)
	f, v := smoothed(cell, pair, m.BiasPrior)
	f *= sigma0 // F is SideA's
	mean := f
	var presence, fresh float64 // the features of B and of the newcomers' mean
	var tbuf [32][3]kalmanTerm
	terms := tbuf[:0]
	for i := range ups {
		u := &ups[i]
		u.Share = ratio(u.Share, sumT)
		u.CommandShare = ratio(u.CommandShare, sumC)
		ts := teamSign(u.Team)
		w := size * u.Share
		b := &u.Before
		if b.Games == 0 && *b == (Rating{}) {
			b.Skill = newcomer
			fresh += ts * w
		}
		presence += ts * w
		t := [3]kalmanTerm{
			{ts * w, m.skillVariance(b, &r, u.Share)},
			{sigma0 * w, drifted(b.OffsetSigma, m.OffsetSD, m.OffsetDrift, u.Share)},
			{ts * u.CommandShare, drifted(b.CommanderSigma, m.CommanderSD, m.CommanderDrift, u.CommandShare)},
		}
		terms = append(terms, t)
		mean += t[0].x*(base+b.Skill) + t[1].x*b.Offset + t[2].x*b.Commander
		for _, k := range t {
			v += k.x * k.x * k.v
		}
	}
	v += presence*presence*baseVar + fresh*fresh*newcomerVar + m.Noise*m.Noise
	z := mean / math.Sqrt(1+math.Pi*v/8)
	p := sigmoid(z)
	served := sigmoid(temp * z)

	g := r.Score()
	m.update(ups, terms, &r, mean, v, p)

	// The result's part in the context-wide terms: each a pseudo-observation of the term
	// (the value used plus the residual over the slope) with weight h x^2.
	h := p * (1 - p)
	entry.Terms = Terms{
		Presence: h*presence*presence*base + (g-p)*presence, PresenceWeight: h * presence * presence,
		Newcomer: h*fresh*fresh*newcomer + (g-p)*fresh, NewcomerWeight: h * fresh * fresh,
	}
	entry.Terms.Scale, entry.Terms.ScaleWeight = scaleTerms(z, g, temp, weight)
	return Outcome{WinProbability: [2]float64{served, 1 - served}, Bias: f, Updates: ups, BiasUpdate: entry}, nil
}

// skillVariance is a participant's skill variance before a match in which his share is w: his
// Sigma (or the prior) grown by the drift of a match and of the days since his last, and raised
// back to a newcomer's while his first results say he is better than rated.
func (m Kalman) skillVariance(b *Rating, r *Result, w float64) float64 {
	v := drifted(b.Sigma, m.SkillSD, m.SkillDrift, w) + idle(m.SkillDriftPerDay, r.idleDays(b.LastPlayed), w)
	if w > 0 && m.outperforming(*b) {
		v = max(v, m.SkillSD*m.SkillSD)
	}
	return v
}

// update learns every participant's terms from the result, the logit having been believed
// N(mean, v) and predicted p: the rank-one Kalman update, and the smurf evidence.
func (m Kalman) update(ups []Update, terms [][3]kalmanTerm, r *Result, mean, v, p float64) {
	g := r.Score()
	d, shrink := assumedDensity(mean, v, g, p)
	step := func(mean, sd *float64, k kalmanTerm) {
		if k.x == 0 {
			return
		}
		*mean += k.v * k.x * d
		*sd = math.Sqrt(k.v * max(1-k.v*k.x*k.x*shrink, 0))
	}
	for i := range ups {
		u := &ups[i]
		a := u.Before
		t := terms[i]
		if a.Games < m.SmurfGames && t[0].x != 0 {
			a.Surprise = max(0, a.Surprise+m.smurfEvidence(mean, v, t[0], g))
		}
		step(&a.Skill, &a.Sigma, t[0])
		step(&a.Offset, &a.OffsetSigma, t[1])
		step(&a.Commander, &a.CommanderSigma, t[2])
		a.played(r)
		u.After = a
	}
}

// sizeScale is the weight of the players' terms in the logit of a match of n a side, relative
// to a 2v2's: (n/2)^exponent. The NS2 prediction is the mean of the skills over both teams, so
// that with exponent 0 a team of eight strong players beats eight average ones no more surely
// than two beat two; the spread of the logit over random teams then shrinks as 1/sqrt(n), a
// big team's match is predicted near a coin flip and each of its players learnt slowly. Where
// a team's strength is the sum of its players' performances, each with its own noise
// (TrueSkill's model), that spread stays as it is whatever the size: exponent 1/2.
func sizeScale(n int, exponent float64) float64 {
	if exponent == 0 || n == 2 {
		return 1
	}
	return math.Pow(float64(n)/2, exponent)
}

// drifted is a term's variance before a match: its standard deviation (0: the prior's)
// squared, plus the drift of a match when the participant took part in the term (w > 0).
func drifted(sd, prior, drift, w float64) float64 {
	if sd <= 0 {
		sd = prior
	}
	if w > 0 {
		return sd*sd + drift*drift
	}
	return sd * sd
}

// outperforming reports whether a rating's first results say, with half the evidence of a
// suspected smurf, that its participant is better than rated: his skill's variance is then
// raised back to the newcomers' before his next match, so that it moves fast.
func (m Kalman) outperforming(r Rating) bool {
	return m.SmurfGames > 0 && r.Games < m.SmurfGames && r.Surprise > m.SmurfLLR/2
}

// SuspectedSmurf reports whether a rating's results so far say its participant is far better
// than rated: Surprise above SmurfLLR, in his first SmurfGames results.
func (m Kalman) SuspectedSmurf(r Rating) bool {
	return m.SmurfGames > 0 && r.Games < m.SmurfGames && r.Surprise > m.SmurfLLR
}

// smurfEvidence is one result's log-likelihood ratio for a participant whose skill term is k
// (in a logit of mean and variance v, outcome g for team 0): the probability of the outcome
// were his skill SmurfGap higher, over its probability as rated.
func (m Kalman) smurfEvidence(mean, v float64, k kalmanTerm, g float64) float64 {
	s := math.Sqrt(1 + math.Pi*v/8)
	p, q := sigmoid(mean/s), sigmoid((mean+k.x*m.SmurfGap)/s)
	if g == 0.5 {
		return 0.5 * (math.Log(q/p) + math.Log((1-q)/(1-p)))
	}
	if g == 0 {
		p, q = 1-p, 1-q
	}
	return math.Log(q / p)
}

// idle is the variance a skill gains over days without a match at perDay a day, when the
// participant took part (w > 0).
func idle(perDay, days, w float64) float64 {
	if w > 0 && days > 0 {
		return perDay * perDay * days
	}
	return 0
}

// IdleSigma is a skill's uncertainty at now (Unix seconds) for a rating last played at
// LastPlayed: its Sigma (or prior, when 0) grown by the idle drift of the days between. It
// is what a read of the rating shows, so that an idle player's conservative rating sinks.
func (m Kalman) IdleSigma(r Rating, now int64) float64 {
	return Ranking{PriorSigma: m.SkillSD, DriftSq: m.SkillDriftPerDay * m.SkillDriftPerDay, Now: now}.Sigma(r)
}

// assumedDensity updates the belief x ~ N(mean, v) about team 0's logit by the outcome g,
// returning d and shrink such that the posterior is N(mean + v d, v (1 - v shrink)). A win or
// a loss is the probit likelihood Phi(+-x sqrt(pi/8)), whose posterior moments are exact
// (TrueSkill's v and w functions); a draw is the Laplace step of the half-win likelihood
// p^(1/2) (1-p)^(1/2) around p, the predictive probability.
func assumedDensity(mean, v, g, p float64) (d, shrink float64) {
	if g != 0 && g != 1 {
		h := p * (1 - p)
		return (g - p) / (1 + h*v), h / (1 + h*v)
	}
	const l2 = math.Pi / 8
	sign := 2*g - 1
	s2 := 1 + l2*v
	t := sign * math.Sqrt(l2/s2) * mean
	vt := millsInverse(t)
	return sign * math.Sqrt(l2/s2) * vt, l2 / s2 * vt * (vt + t)
}

// millsInverse is phi(t) / Phi(t), the normal density over its distribution function, with an
// asymptotic series where Phi(t) underflows.
func millsInverse(t float64) float64 {
	if t < -30 {
		x := -t // phi/Phi(-x) = x / (1 - 1/x^2 + 3/x^4 - 15/x^6 ...)
		x2 := x * x
		return x / (1 - 1/x2 + 3/(x2*x2) - 15/(x2*x2*x2))
	}
	return math.Exp(-t*t/2) / math.Sqrt(2*math.Pi) / (0.5 * math.Erfc(-t/math.Sqrt2))
}
