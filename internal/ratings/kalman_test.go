package ratings

import (
	"fmt"
	"math"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// normal integrates f against the density of N(mean, v) by Simpson's rule over +-12 sd.
func normal(mean, v float64, f func(x float64) float64) float64 {
	const n = 4000
	sd := math.Sqrt(v)
	a, h := mean-12*sd, 24*sd/n
	var s float64
	for i := 0; i <= n; i++ {
		x := a + float64(i)*h
		w := 2.0 + 2*float64(i%2)
		if i == 0 || i == n {
			w = 1
		}
		s += w * f(x) * math.Exp(-(x-mean)*(x-mean)/(2*v)) / (sd * math.Sqrt(2*math.Pi))
	}
	return s * h / 3
}

func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// TestAssumedDensityIsExact checks the update of a belief N(mean, v) by a win or a loss
// against the posterior's moments integrated numerically.
func TestAssumedDensityIsExact(t *testing.T) {
	t.Parallel()
	l := math.Sqrt(math.Pi / 8)
	for _, c := range []struct{ mean, v float64 }{{0, 0.1}, {0.5, 1}, {-2, 4}, {3, 9}, {-6, 0.5}, {1, 30}} {
		for _, g := range []float64{0, 1} {
			lik := func(x float64) float64 {
				if g == 1 {
					return phi(l * x)
				}
				return phi(-l * x)
			}
			z := normal(c.mean, c.v, lik)
			m1 := normal(c.mean, c.v, func(x float64) float64 { return x * lik(x) }) / z
			m2 := normal(c.mean, c.v, func(x float64) float64 { return x * x * lik(x) }) / z
			d, shrink := assumedDensity(c.mean, c.v, g, 0.5)
			if got, want := c.mean+c.v*d, m1; math.Abs(got-want) > 1e-8*max(1, math.Abs(want)) {
				t.Errorf("mean %v var %v outcome %v: posterior mean %.12g, want %.12g", c.mean, c.v, g, got, want)
			}
			if got, want := c.v*(1-c.v*shrink), m2-m1*m1; math.Abs(got-want) > 1e-8*max(1, want) {
				t.Errorf("mean %v var %v outcome %v: posterior variance %.12g, want %.12g", c.mean, c.v, g, got, want)
			}
		}
	}
	// Far in the tail the series takes over from the direct ratio without a seam.
	direct := math.Exp(-450) / math.Sqrt(2*math.Pi) / phi(-30)
	if got := millsInverse(-30.0000001); math.Abs(got-direct) > 1e-8*direct {
		t.Errorf("millsInverse at -30: series %v, direct %v", got, direct)
	}
	if d, s := assumedDensity(-200, 1, 1, 0); !finite(d) || !finite(s) || d <= 0 {
		t.Errorf("a win against all odds: d %v, shrink %v", d, s)
	}
	// A draw at even odds moves nobody.
	if d, _ := assumedDensity(0, 1, 0.5, 0.5); d != 0 {
		t.Errorf("even draw: d = %v", d)
	}
}

// duel is a 1v1 between a and b on an empty table, a winning.
func duel(a, b Rating) (Result, map[Participant]Rating) {
	r := Result{MatchID: "d", GameType: "duel", Map: "m", DurationS: 600, Winner: intp(0), Teams: []Team{
		{Side: "red", Players: []Player{{ID: "a", LeftS: 600}}},
		{Side: "blue", Players: []Player{{ID: "b", LeftS: 600}}},
	}}
	return r, map[Participant]Rating{{ID: "a"}: a, {ID: "b"}: b}
}

// TestKalmanUpdateIsTheExactPosterior replays one duel and integrates the exact posterior of
// a's skill numerically: everything else in the logit is one independent Gaussian, so the
// posterior is a two-dimensional integral. The model's update must be its mean and variance.
func TestKalmanUpdateIsTheExactPosterior(t *testing.T) {
	t.Parallel()
	m := DefaultKalman()
	m.OffsetSD, m.SizeExponent = 0, 0 // a duel's skills enter the logit as halves: s_a/2 - s_b/2
	r, prior := duel(Rating{Skill: 0.7, Sigma: 1.2, Games: 9}, Rating{Skill: -0.3, Sigma: 0.4, Games: 30})
	o, err := m.Apply(prior, BiasTable{}, r)
	if err != nil {
		t.Fatal(err)
	}
	va := 1.2*1.2 + m.SkillDrift*m.SkillDrift
	vb := 0.4*0.4 + m.SkillDrift*m.SkillDrift
	vf := 2 / (m.BiasPrior / 2)       // F's variance on an empty table
	rest, vrest := -0.5*-0.3, vb/4+vf // the logit less a's part: b's skill and F
	l := math.Sqrt(math.Pi / 8)
	// p(s | win) is proportional to N(s; 0.7, va) E_rest[Phi(l (s/2 + rest))], and that inner
	// expectation is Phi(l (s/2 + rest) / sqrt(1 + l^2 vrest)).
	lik := func(s float64) float64 { return phi(l * (s/2 + rest) / math.Sqrt(1+l*l*vrest)) }
	z := normal(0.7, va, lik)
	mean := normal(0.7, va, func(s float64) float64 { return s * lik(s) }) / z
	second := normal(0.7, va, func(s float64) float64 { return s * s * lik(s) }) / z
	a := o.Updates[0]
	if a.Participant.ID != "a" || math.Abs(a.After.Skill-mean) > 1e-8 || math.Abs(a.After.Sigma*a.After.Sigma-(second-mean*mean)) > 1e-8 {
		t.Errorf("a after: skill %.12g sigma^2 %.12g, want %.12g %.12g", a.After.Skill, a.After.Sigma*a.After.Sigma, mean, second-mean*mean)
	}
	// The served probability is the belief's average win probability, to the probit
	// approximation's accuracy.
	x := 0.5*0.7 + rest
	v := va/4 + vrest
	avg := normal(x, v, sigmoid)
	if got := o.WinProbability[0]; math.Abs(got-avg) > 0.002 {
		t.Errorf("win probability %v, the belief's average %v", got, avg)
	}
}

func TestKalmanNewcomersMoveMoreThanVeterans(t *testing.T) {
	t.Parallel()
	m := DefaultKalman()
	r := Result{MatchID: "n", GameType: "tdm", Map: "m", DurationS: 600, Winner: intp(0), Teams: []Team{
		{Side: "red", Players: []Player{{ID: "new", LeftS: 600}, {ID: "vet", LeftS: 600}}},
		{Side: "blue", Players: []Player{{ID: "x", LeftS: 600}, {ID: "y", LeftS: 600}}},
	}}
	prior := map[Participant]Rating{{ID: "vet"}: {Sigma: 0.5, Games: 200}, {ID: "x"}: {Sigma: 1, Games: 20}, {ID: "y"}: {Sigma: 1, Games: 20}}
	o, err := m.Apply(prior, BiasTable{}, r)
	if err != nil {
		t.Fatal(err)
	}
	after := map[string]Rating{}
	for _, u := range o.Updates {
		after[u.Participant.ID] = u.After
		if u.After.Sigma >= math.Sqrt(drifted(u.Before.Sigma, m.SkillSD, m.SkillDrift, 1)) {
			t.Errorf("%s: sigma %v did not shrink", u.Participant.ID, u.After.Sigma)
		}
	}
	if !(after["new"].Skill > 3*after["vet"].Skill && after["vet"].Skill > 0) {
		t.Errorf("after a win the newcomer gained %v, the veteran %v", after["new"].Skill, after["vet"].Skill)
	}
	if after["x"].Skill >= 0 || after["new"].Games != 1 || after["vet"].Games != 201 {
		t.Errorf("after: %+v", after)
	}
}

// TestKalmanUncertaintyPullsTowardsHalf: the same means, known or barely known, and the
// served probability says how much is known.
func TestKalmanUncertaintyPullsTowardsHalf(t *testing.T) {
	t.Parallel()
	m := DefaultKalman()
	m.SizeExponent = 0 // the duel's logit is (2 - -2)/2
	p := func(sigma float64) float64 {
		r, prior := duel(Rating{Skill: 2, Sigma: sigma, Games: 50}, Rating{Skill: -2, Sigma: sigma, Games: 50})
		o, err := m.Apply(prior, BiasTable{}, r)
		if err != nil {
			t.Fatal(err)
		}
		return o.WinProbability[0]
	}
	known, unknown := p(0.2), p(4)
	if !(known > unknown && unknown > 0.5 && math.Abs(known-sigmoid(2)) < 0.02) {
		t.Errorf("p(known) = %v, p(barely known) = %v; want about %v > the second > 1/2", known, unknown, sigmoid(2))
	}
}

// TestKalmanBigTeamsDecideMore: the same gap in skill between the two teams decides a match
// of eight a side more surely than a pair's at the default SizeExponent (each player's term
// weighs (n/2)^(1/2)), and about as surely with exponent 0, the NS2 mean. And a player of a
// big team is learnt faster: after an even 8v8 a winner moves half as far as after an even
// 2v2 (the logit's spread is then the same), where the mean moves him about a quarter.
func TestKalmanBigTeamsDecideMore(t *testing.T) {
	t.Parallel()
	match := func(n int, gap float64) (Result, map[Participant]Rating) {
		r := Result{MatchID: "big", GameType: "tdm", Map: "m", DurationS: 600, Winner: intp(0), Teams: []Team{{Side: "red"}, {Side: "blue"}}}
		prior := map[Participant]Rating{}
		for i := range n {
			for ti, skill := range []float64{gap / 2, -gap / 2} {
				id := fmt.Sprintf("t%dp%d", ti, i)
				r.Teams[ti].Players = append(r.Teams[ti].Players, Player{ID: id, LeftS: 600})
				prior[Participant{ID: id}] = Rating{Skill: skill, Sigma: 1, Games: 20}
			}
		}
		return r, prior
	}
	apply := func(m Kalman, n int, gap float64) (p, step float64) {
		r, prior := match(n, gap)
		o, err := m.Apply(prior, BiasTable{}, r)
		if err != nil {
			t.Fatal(err)
		}
		return o.WinProbability[0], o.Updates[0].After.Skill - o.Updates[0].Before.Skill
	}
	m := DefaultKalman()
	m.OffsetSD = 0
	p2, _ := apply(m, 2, 2)
	p8, _ := apply(m, 8, 2)
	_, step2 := apply(m, 2, 0)
	_, step8 := apply(m, 8, 0)
	if !(p8 > p2+0.1) || math.Abs(step8/step2-0.5) > 1e-9 {
		t.Errorf("exponent 1/2: 2v2 %.4f, 8v8 %.4f; a winner's step in an even 8v8 %.4f of the 2v2's", p2, p8, step8/step2)
	}
	m.SizeExponent = 0
	if q2, _ := apply(m, 2, 2); math.Abs(q2-p2) > 1e-12 {
		t.Errorf("a 2v2 is weighed 1 whatever the exponent: %v and %v", q2, p2)
	}
	// With exponent 0 the logit's mean is the same, only its uncertainty (smaller for the mean
	// of more skills) differs.
	q8, _ := apply(m, 8, 2)
	_, s8 := apply(m, 8, 0)
	if math.Abs(q8-p2) > 0.02 || q8 < p2 || math.Abs(s8/step2-0.25) > 0.05 {
		t.Errorf("exponent 0: 8v8 %.4f, want a little above the 2v2's %.4f; a step %.4f of the 2v2's", q8, p2, s8/step2)
	}
}

// TestKalmanPriorRatings: a rating without a sigma (stored before the field existed, or by
// NS2) is as uncertain as a newcomer around its own skill; only the zero Rating is a
// newcomer, who starts from the newcomers' learnt mean.
func TestKalmanPriorRatings(t *testing.T) {
	t.Parallel()
	m := DefaultKalman()
	old := Rating{Skill: 1.5, Offset: 0.2, Games: 40}
	r, prior := duel(old, Rating{})
	a, err := m.Apply(prior, BiasTable{}, r)
	if err != nil {
		t.Fatal(err)
	}
	explicit := old
	explicit.Sigma, explicit.OffsetSigma = m.SkillSD, m.OffsetSD
	r, prior = duel(explicit, Rating{})
	b, _ := m.Apply(prior, BiasTable{}, r)
	if a.Updates[0].After != b.Updates[0].After || a.WinProbability != b.WinProbability {
		t.Errorf("sigma 0 %+v, sigma explicit %+v", a.Updates[0].After, b.Updates[0].After)
	}
	// A learnt newcomers' mean of -1 (from the table's terms) is where a newcomer starts.
	var bias BiasTable
	k, _ := NewBiasKey("red", "blue", "m", 1)
	bias.Record(BiasEntry{k, BiasCell{Games: 1, Terms: Terms{Newcomer: -1e6, NewcomerWeight: 1e6}}})
	r, prior = duel(Rating{Games: 3, Sigma: 1}, Rating{})
	o, _ := m.Apply(prior, bias, r)
	if o.WinProbability[0] <= 0.5 || o.Updates[1].After.Skill > -1 {
		t.Errorf("against a newcomer from a weak intake: p = %v, newcomer after %+v", o.WinProbability[0], o.Updates[1].After)
	}
}

func TestKalmanAbsentAndDraw(t *testing.T) {
	t.Parallel()
	m := DefaultKalman()
	r := Result{MatchID: "a", GameType: "tdm", Map: "m", DurationS: 600, Teams: []Team{
		{Side: "red", Players: []Player{{ID: "a", LeftS: 600}, {ID: "ghost", JoinedS: 300, LeftS: 300, CommanderS: 0}}},
		{Side: "blue", Players: []Player{{ID: "b", LeftS: 600}}},
	}}
	prior := map[Participant]Rating{{ID: "ghost"}: {Skill: 2, Sigma: 1, Games: 5}}
	o, err := m.Apply(prior, BiasTable{}, r) // a draw
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range o.Updates {
		switch u.Participant.ID {
		case "ghost":
			if want := (Rating{Skill: 2, Sigma: 1, Games: 6, SeasonGames: 1}); u.After != want {
				t.Errorf("absent participant: %+v, want %+v", u.After, want)
			}
		default:
			if math.Abs(u.After.Skill) > 1e-12 || u.After.Sigma >= m.SkillSD {
				t.Errorf("%s after an even draw: %+v", u.Participant.ID, u.After)
			}
		}
	}
	if o.BiasUpdate.Wins != 0.5 || o.BiasUpdate.Games != 1 || o.BiasUpdate.Terms.PresenceWeight != 0 {
		t.Errorf("bias update %+v", o.BiasUpdate)
	}
}

func TestKalmanValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultKalman().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []Kalman{{}, {SkillSD: 1, BasePrior: 1, NewcomerPrior: 1, ScalePrior: 1, BiasPrior: 1, SkillDrift: -1},
		{SkillSD: math.NaN(), BasePrior: 1, NewcomerPrior: 1, ScalePrior: 1, BiasPrior: 1}} {
		if err := m.Validate(); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("%+v: err = %v", m, err)
		}
		if _, err := m.Apply(nil, BiasTable{}, handResult()); apperr.CodeOf(err) != apperr.Internal {
			t.Errorf("apply with %+v: err = %v, want internal", m, err)
		}
	}
}
