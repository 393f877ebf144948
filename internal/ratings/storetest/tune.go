package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	leagues "github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// TuneService checks tuning end to end over a store (empty, of its own): a service whose
// defaults are far off a league's history records it, tunes the game type, and from then on
// the tuning is stored, rebuilds replay the history with it, and results are learnt with it,
// by this service and by another over the same store (another replica).
func TuneService(t *testing.T, st ratings.Store, results int) {
	TuneServiceOf(t, st, results, OffKalman())
}

// OffKalman is ns2-kalman far off the leagues: its players barely move.
func OffKalman() ratings.Kalman {
	off := ratings.DefaultKalman()
	off.SkillSD, off.SkillDrift, off.BiasPrior = 0.5, 0.01, 1000
	return off
}

// OffMixture is ns2-mix whose ns2-kalman is OffKalman and whose weight barely remembers
// (Memory 3).
func OffMixture() ratings.Mixture {
	m := ratings.DefaultMixture()
	m.First, m.Memory = OffKalman(), 3
	return m
}

// TuneServiceOf is TuneService with the service's model off (OffKalman, OffMixture).
func TuneServiceOf(t *testing.T, st ratings.Store, results int, off ratings.Tunable) {
	ctx := context.Background()
	svc := ratings.NewService(st, off)
	cfg := leagues.Default(1)
	history := leagues.Results(leagues.Simulate(cfg))[:results+2]
	for i := range history { // a day between results: the replays below see the idle drift as the store did
		history[i].EndedAt = time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i)
	}
	for _, r := range history[:results] {
		if _, err := svc.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	reports, err := svc.Tune(ctx, cfg.GameType)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 {
		t.Fatalf("Tune reported %d contexts, want 1: %+v", len(reports), reports)
	}
	rep := reports[0].Report
	t.Logf("tuned %s: %+v", reports[0].Context, rep)
	if !rep.Accepted || rep.Results != results || !(rep.FitAfter < rep.FitBefore) || !(rep.HeldOutAfter < rep.HeldOutBefore) ||
		rep.Default != off.Tuned() || rep.Params == off.Tuned() {
		t.Fatalf("the fit of a history the defaults are far off: %+v", rep)
	}
	stored, err := st.Tunings(ctx, cfg.GameType)
	if err != nil {
		t.Fatal(err)
	}
	if got := stored[cfg.GameType]; len(stored) != 1 || got.Params != rep.Params || got.Model != off.Name() || got.Report != rep {
		t.Fatalf("stored tunings %+v, want the accepted fit %+v", stored, rep)
	}

	// A rebuild replays the history with the tuned model.
	tuned := ratings.WithTuning(off, rep.Params)
	want, err := ratings.Replay(tuned, history[:results])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Rebuild(ctx, cfg.GameType, nil); err != nil {
		t.Fatal(err)
	}
	c := mustContext(t, cfg.GameType)
	ps := want.Participants()
	got, err := st.Ratings(ctx, c, ps)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if !sameBits(got[p], want.Ratings[p]) {
			t.Fatalf("%s after the rebuild: %+v, want the tuned replay's %+v", p, got[p], want.Ratings[p])
		}
	}
	// The next results are learnt with it: by this service, and by a new one (a replica).
	other := ratings.NewService(st, off)
	for i, s := range []*ratings.Service{svc, other} {
		r := history[results+i]
		untuned, err := off.Apply(want.Ratings, want.Bias, r)
		if err != nil {
			t.Fatal(err)
		}
		o, err := want.Apply(tuned, r)
		if err != nil {
			t.Fatal(err)
		}
		receipt, err := s.Record(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if !near(receipt.Outcome.WinProbability[0], o.WinProbability[0]) {
			t.Fatalf("service %d predicted %v, want the tuned model's %v", i, receipt.Outcome.WinProbability[0], o.WinProbability[0])
		}
		if near(untuned.WinProbability[0], o.WinProbability[0]) {
			t.Fatalf("result %d: the tuned and untuned predictions agree (%v): the check cannot fail", i, o.WinProbability[0])
		}
	}
}
