package ratings_test

import (
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// A history too short to tell a fit from luck keeps the defaults, with its log loss reported.
func TestTuneKeepsDefaultsOnShortHistory(t *testing.T) {
	h := league.Results(league.Simulate(league.Default(1)))[:ratings.MinTuneResults-1]
	m := ratings.DefaultKalman()
	rep, err := ratings.Tune(m, h)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Accepted || rep.Params != m.Tuned() || rep.Evaluations != 1 || rep.Reason == "" ||
		!(rep.FitBefore > 0.5 && rep.FitBefore < 0.7) || rep.FitAfter != rep.FitBefore {
		t.Fatalf("a short history's report: %+v", rep)
	}
}

// WithTuned and Tuned invert each other, and leave what is not tuned alone.
func TestTunedParamsRoundTrip(t *testing.T) {
	p := ratings.TunedParams{SkillSD: 1.5, NewcomerSkill: -1, SkillDrift: 0.2, Noise: 0.5, BiasPrior: 20, OffsetSD: 0.1}
	m := ratings.DefaultKalman().WithTuned(p)
	if m.Tuned() != p {
		t.Fatalf("Tuned() = %+v, want %+v", m.Tuned(), p)
	}
	d := ratings.DefaultKalman()
	if m.BaseSkill != d.BaseSkill || m.CommanderSD != d.CommanderSD || m.ScalePrior != d.ScalePrior || m.NewcomerPrior != d.NewcomerPrior {
		t.Fatalf("WithTuned changed an untuned parameter: %+v", m)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
}
