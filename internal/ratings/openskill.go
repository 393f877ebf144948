package ratings

import (
	"errors"
	"math"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// WengLin is OpenSkill's rating: the Bayesian approximation of Weng and Lin (JMLR 2011) with
// a Plackett-Luce or a full Bradley-Terry likelihood, computed as the npm package openskill
// 5.0.1 computes it -- the fixture in testdata/openskill-fixture.json, made with that package
// (tools/openskill-fixture), holds this code to it within 1e-9. Each participant has a mean mu
// and a standard deviation sigma; a team's performance is the sum of its players'.
//
// What the reference does not have, added the way its model implies:
//   - partial play: a participant present for a share w of the match (the seed's time
//     weighting, w = t_i / t of a whole match) adds w times their performance to the team's,
//     so the team's mean is sum w mu and its variance sum w^2 sigma^2, and their update is the
//     reference's update of that scaled performance mapped back (a mean moves w times as far,
//     a variance shrinks by w^2 as much). The npm package declares a `weight` option but
//     ignores it; openskill.py's weights, normalised per team, are another rule;
//   - the win probability is the model's own likelihood, the logistic form
//     1 / (1 + exp(-(mu_0 - mu_1) / c)), c = sqrt(sigma_0^2 + sigma_1^2 + 2 beta^2), rather
//     than the package's predictWin (a normal CDF with a narrower spread), which scores far
//     worse on every data set in docs/ratings.md; and what is served is calibrated by a learnt
//     temperature (calibrate.go): Weng-Lin's ratings are overconfident, on every data set;
//     the fixture's reference has none of this.
//
// For two teams the Plackett-Luce and Bradley-Terry updates are the same function (the fixture
// checks both code paths). Sides, maps and commanders play no part; the bias table's entry is
// still reported, so that a context can switch models. Rating.Skill holds mu - Mu (so the zero
// Rating is the prior) and Rating.Sigma holds sigma, 0 meaning the prior's Sigma.
type WengLin struct {
	PlackettLuce bool    // the Plackett-Luce likelihood; false is Bradley-Terry (full pairing)
	Mu           float64 // prior mean
	Sigma        float64 // prior standard deviation
	Beta         float64 // performance noise of one team
	Tau          float64 // drift: added to every sigma (in quadrature) before each match
	Kappa        float64 // floor of the variance's shrink factor
	// ScalePrior is the weight of the served probability's temperature's prior (see
	// calibrate.go); 0 serves the likelihood's probability as it is.
	ScalePrior float64
}

// DefaultWengLin is openskill's defaults (mu 25, sigma 25/3, beta 25/6, tau 25/300,
// kappa 1e-4), with the served probability calibrated.
func DefaultWengLin(plackettLuce bool) WengLin {
	return WengLin{PlackettLuce: plackettLuce, Mu: 25, Sigma: 25.0 / 3, Beta: 25.0 / 6, Tau: 25.0 / 300, Kappa: 1e-4,
		ScalePrior: DefaultScalePrior}
}

// Name is "openskill-pl" or "openskill-bt".
func (m WengLin) Name() string {
	if m.PlackettLuce {
		return "openskill-pl"
	}
	return "openskill-bt"
}

// Validate checks the parameters: finite, Sigma, Beta and Kappa positive, Tau non-negative.
func (m WengLin) Validate() error {
	err := validateParams(param{"tau", m.Tau, false}, param{"scale_prior", m.ScalePrior, false},
		param{"sigma", m.Sigma, true}, param{"beta", m.Beta, true}, param{"kappa", m.Kappa, true})
	if !finite(m.Mu) {
		return errors.Join(apperr.Field("mu", "must be a finite number"), err)
	}
	return err
}

// wlPlayer is one participant's part in a Weng-Lin update.
type wlPlayer struct {
	mu, sigma, w float64
}

// Apply learns from one result (see Model).
func (m WengLin) Apply(prior map[Participant]Rating, bias BiasTable, r Result) (Outcome, error) {
	return m.apply(prior, bias.Total, r)
}

// apply is Apply with the side pair's totals, whose temperature's sums it reads, from pair.
func (m WengLin) apply(prior map[Participant]Rating, pair func(BiasKey) BiasCell, r Result) (Outcome, error) {
	var buf [32]matchEntry
	order, ups, err := prepare(m, prior, &r, buf[:0])
	if err != nil {
		return Outcome{}, err
	}
	var pbuf [32]wlPlayer
	players := pbuf[:0]
	k := 2 / r.DurationS
	whole := presence(0, r.DurationS, k)
	var sumT float64
	for i, e := range order {
		before := ups[i].Before
		t := presence(e.pl.JoinedS, e.pl.LeftS, k)
		sumT += t
		ups[i].Share = t
		w := t / whole
		if w < 1e-100 { // its square would underflow: as good as absent
			w = 0
		}
		players = append(players, wlPlayer{mu: m.Mu + before.Skill, sigma: m.sigmaOf(before), w: w})
	}
	split := 0 // team 1 starts here
	for split < len(order) && order[split].team == 0 {
		split++
	}
	teams := [2][]wlPlayer{players[:split], players[split:]}
	z := m.logit(teams)
	m.rate(teams, r.Winner)
	for i := range ups {
		u := &ups[i]
		u.Share = ratio(u.Share, sumT)
		u.After = u.Before
		u.After.Skill = players[i].mu - m.Mu
		u.After.Sigma = players[i].sigma
		u.After.played(&r)
	}
	entry, _ := r.biasEntry()
	p0 := sigmoid(z)
	if m.ScalePrior > 0 {
		t, weight := temperature(pair(entry.Key), m.ScalePrior)
		p0 = sigmoid(t * z)
		entry.Terms.Scale, entry.Terms.ScaleWeight = scaleTerms(z, r.Score(), t, weight)
	}
	return Outcome{WinProbability: [2]float64{p0, 1 - p0}, Updates: ups, BiasUpdate: entry}, nil
}

// sigmaOf is a rating's sigma, the prior's for a rating that has none.
func (m WengLin) sigmaOf(r Rating) float64 {
	if r.Sigma > 0 {
		return r.Sigma
	}
	return m.Sigma
}

// wlTeam is a team's summed performance.
type wlTeam struct {
	mu, sigmaSq float64
	rank        int // 0 for the winner (and both teams in a draw), 1 for the loser
}

func (m WengLin) team(ps []wlPlayer, rank int) wlTeam {
	t := wlTeam{rank: rank}
	for _, p := range ps {
		t.mu += p.w * p.mu
		t.sigmaSq += p.w * p.w * p.sigma * p.sigma
	}
	return t
}

// logit is the logit of team 0's win probability under the Bradley-Terry likelihood at the
// means.
func (m WengLin) logit(teams [2][]wlPlayer) float64 {
	a, b := m.team(teams[0], 0), m.team(teams[1], 0)
	return (a.mu - b.mu) / math.Sqrt(a.sigmaSq+b.sigmaSq+2*m.Beta*m.Beta)
}

// rate updates the players in place, as openskill's rate() with the model's likelihood.
func (m WengLin) rate(teams [2][]wlPlayer, winner *int) {
	ranks := [2]int{0, 0}
	if winner != nil {
		ranks[1-*winner] = 1
	}
	for _, t := range teams {
		for i := range t {
			if t[i].w > 0 {
				t[i].sigma = math.Sqrt(t[i].sigma*t[i].sigma + m.Tau*m.Tau)
			}
		}
	}
	tr := [2]wlTeam{m.team(teams[0], ranks[0]), m.team(teams[1], ranks[1])}
	var omega, delta [2]float64
	if m.PlackettLuce {
		omega, delta = m.plackettLuce(tr)
	} else {
		omega, delta = m.bradleyTerry(tr)
	}
	for ti, t := range teams {
		for i := range t {
			p := &t[i]
			if p.w == 0 || tr[ti].sigmaSq == 0 { // absent, or a team of the absent
				continue
			}
			share := p.w * p.w * p.sigma * p.sigma / tr[ti].sigmaSq
			p.mu += p.w * p.sigma * p.sigma / tr[ti].sigmaSq * omega[ti]
			p.sigma *= math.Sqrt(max(1-share*delta[ti], m.Kappa))
		}
	}
}

// plackettLuce is the reference's Plackett-Luce step for each team: omega moves the team's
// mean, delta shrinks its variance.
func (m WengLin) plackettLuce(tr [2]wlTeam) (omega, delta [2]float64) {
	c := math.Sqrt(tr[0].sigmaSq + m.Beta*m.Beta + tr[1].sigmaSq + m.Beta*m.Beta)
	var sumQ [2]float64
	var a [2]float64
	for q := range tr {
		for i := range tr {
			if tr[i].rank >= tr[q].rank {
				sumQ[q] += math.Exp(tr[i].mu / c)
			}
			if tr[i].rank == tr[q].rank {
				a[q]++
			}
		}
	}
	for i := range tr {
		e := math.Exp(tr[i].mu / c)
		var o, d float64
		for q := range tr {
			if tr[q].rank > tr[i].rank {
				continue
			}
			quot := e / sumQ[q]
			if i == q {
				o += (1 - quot) / a[q]
			} else {
				o -= quot / a[q]
			}
			d += quot * (1 - quot) / a[q]
		}
		gamma := math.Sqrt(tr[i].sigmaSq) / c
		omega[i] = o * (tr[i].sigmaSq / c)
		delta[i] = d * (tr[i].sigmaSq / (c * c)) * gamma
	}
	return omega, delta
}

// bradleyTerry is the reference's full-pairing Bradley-Terry step.
func (m WengLin) bradleyTerry(tr [2]wlTeam) (omega, delta [2]float64) {
	for i := range tr {
		q := 1 - i
		ciq := math.Sqrt(tr[i].sigmaSq + tr[q].sigmaSq + 2*m.Beta*m.Beta)
		piq := 1 / (1 + math.Exp((tr[q].mu-tr[i].mu)/ciq))
		eta := tr[i].sigmaSq / ciq
		gamma := math.Sqrt(tr[i].sigmaSq) / ciq
		score := 0.5
		switch {
		case tr[q].rank < tr[i].rank:
			score = 0
		case tr[q].rank > tr[i].rank:
			score = 1
		}
		omega[i] = eta * (score - piq)
		delta[i] = gamma * eta / ciq * piq * (1 - piq)
	}
	return omega, delta
}
