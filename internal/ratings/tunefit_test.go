package ratings_test

import (
	"sync/atomic"
	"testing"
	"time"

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

// Self-tuning runs one replay at a time (beside the service's work), api tune two: the
// search sees the same candidates in the same order, so both keep the same fit.
func TestTuneOneReplayAtATimeFindsTheSameFit(t *testing.T) {
	t.Parallel()
	h := league.Results(league.Simulate(league.Default(2)))[:ratings.MinTuneResults]
	m := ratings.DefaultKalman()
	two, err := ratings.TuneReplaysAtOnce(m, h, 2)
	if err != nil {
		t.Fatal(err)
	}
	one, err := ratings.TuneReplaysAtOnce(m, h, 1)
	if err != nil {
		t.Fatal(err)
	}
	if one != two {
		t.Fatalf("one replay at a time: %+v\ntwo at a time: %+v", one, two)
	}
	if two.Evaluations < 3 {
		t.Fatalf("the search made %d evaluations: it did not search", two.Evaluations)
	}
}

// scoreAll runs at most its count at once: one means one after the other. Each score waits
// (a while at most) for the other to start, so two at once always meet, one at a time never.
func TestScoreAllBoundsTheReplaysAtOnce(t *testing.T) {
	for _, atOnce := range []int{1, 2} {
		var inside, most atomic.Int64
		both := make(chan struct{})
		var started atomic.Int64
		ratings.ScoreAll(make([]ratings.TunedParams, 2), atOnce, func(int) {
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if started.Add(1) == 2 {
				close(both)
			}
			select {
			case <-both:
			case <-time.After(200 * time.Millisecond):
			}
			inside.Add(-1)
		})
		if most.Load() != int64(atOnce) {
			t.Fatalf("at most %d at once: %d ran together", atOnce, most.Load())
		}
	}
}
