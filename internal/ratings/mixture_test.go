package ratings_test

import (
	"math"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// TestMixtureIsItsTwoModels replays a league through the mixture and through each of its
// models alone: every rating is the first model's to the bit, its Alt fields the second's, and
// what is served is the two served probabilities averaged by the evidence so far.
func TestMixtureIsItsTwoModels(t *testing.T) {
	t.Parallel()
	mix := ratings.DefaultMixture()
	var st, first, second ratings.State
	cfg := league.Casual(3)
	cfg.Matches = 400
	var evidence float64
	for i, sm := range league.Simulate(cfg) {
		o, err := st.Apply(mix, sm.Result)
		if err != nil {
			t.Fatal(err)
		}
		fo, err := first.Apply(mix.First, sm.Result)
		if err != nil {
			t.Fatal(err)
		}
		so, err := second.Apply(mix.Second, sm.Result)
		if err != nil {
			t.Fatal(err)
		}
		weight := math.Pow(float64(i)+1, mix.Memory) // one side pair: i results before this one
		w := 1 / (1 + math.Exp(-evidence/weight))
		pk, ps := fo.WinProbability[0], so.WinProbability[0]
		if want := w*pk + (1-w)*ps; math.Abs(o.WinProbability[0]-want) > 1e-12 {
			t.Fatalf("result %d: served %v, want %v (w %v of %v and %v)", i, o.WinProbability[0], want, w, pk, ps)
		}
		g := sm.Result.Score()
		ll := func(p float64) float64 { return g*math.Log(p) + (1-g)*math.Log(1-p) }
		evidence += weight * (ll(pk) - ll(ps))
		for j, u := range o.Updates {
			a, k, s := u.After, fo.Updates[j].After, so.Updates[j].After
			if a.AltSkill != s.Skill || a.AltSigma != s.Sigma {
				t.Fatalf("result %d, %v: second belief %v %v, want %v %v", i, u.Participant, a.AltSkill, a.AltSigma, s.Skill, s.Sigma)
			}
			a.AltSkill, a.AltSigma = 0, 0
			if a != k {
				t.Fatalf("result %d, %v: %+v, want the first model's %+v", i, u.Participant, a, k)
			}
		}
	}
	if len(st.Bias.Pairs()) != 1 {
		t.Fatalf("side pairs %v, want one (the served weight above assumes it)", st.Bias.Pairs())
	}
}

// TestMixtureFollowsTheBetterModel holds Bayesian averaging (Memory 0) to its bound: over a
// whole history its log loss is within ln 2 nats of the better of its two models', on a
// league each model is the better of.
func TestMixtureFollowsTheBetterModel(t *testing.T) {
	t.Parallel()
	for _, cfg := range []league.Config{league.Casual(2), league.Default(2)} {
		cfg.Matches = 1200
		mix := ratings.DefaultMixture()
		mix.Memory = 0
		var st, first, second ratings.State
		var loss [3]float64
		for _, sm := range league.Simulate(cfg) {
			g := sm.Result.Score()
			for i, run := range []struct {
				st *ratings.State
				m  ratings.Model
			}{{&st, mix}, {&first, mix.First}, {&second, mix.Second}} {
				o, err := run.st.Apply(run.m, sm.Result)
				if err != nil {
					t.Fatal(err)
				}
				p := o.WinProbability[0]
				loss[i] -= g*math.Log(p) + (1-g)*math.Log(1-p)
			}
		}
		if best := min(loss[1], loss[2]); loss[0] > best+math.Ln2 {
			t.Errorf("%d results: log loss %.2f nats, the models' %.2f and %.2f", cfg.Matches, loss[0], loss[1], loss[2])
		}
		t.Logf("%d results: mixture %.2f nats, ns2-kalman %.2f, openskill-pl %.2f", cfg.Matches, loss[0], loss[1], loss[2])
	}
}
