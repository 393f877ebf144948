package ratings_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// TestAutoTuneAtTwoThousandThenEachDoubling: a context whose defaults are far off its history
// tunes itself once it holds 2,000 results, keeps the fit (it predicts the held-out tail
// better), rebuilds with it and learns with it; it tries again only at 4,000, starting from
// the fit. An ns2-mix context the same, to its first attempt (its ns2-kalman's parameters and
// its Memory fitted).
func TestAutoTuneAtTwoThousandThenEachDoubling(t *testing.T) {
	autoTuneAtTwoThousand(t, storetest.OffKalman(), true)
	t.Run("ns2-mix", func(t *testing.T) { autoTuneAtTwoThousand(t, storetest.OffMixture(), false) })
}

func autoTuneAtTwoThousand(t *testing.T, off ratings.Tunable, again bool) {
	ctx := context.Background()
	store := ratings.NewMemoryStore(nil)
	svc := ratings.NewService(store, off)
	clk := &clock{time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	svc.SetClock(clk.now)
	history := league.Results(league.Simulate(league.Default(3)))
	record := func(rs []ratings.Result) {
		for _, r := range rs {
			r.EndedAt = clk.t
			if _, err := svc.Record(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	tick := func() []ratings.AutoTuned {
		done, err := svc.AutoTuneTick(ctx, ratings.AutoTune{Rebuild: true})
		if err != nil {
			t.Fatal(err)
		}
		return done
	}
	record(history[:ratings.MinTuneResults-1])
	if done := tick(); len(done) != 0 {
		t.Fatalf("tuned at %d results: %+v", ratings.MinTuneResults-1, done)
	}
	record(history[ratings.MinTuneResults-1 : ratings.MinTuneResults])
	done := tick()
	if len(done) != 1 {
		t.Fatalf("at %d results: %d attempts", ratings.MinTuneResults, len(done))
	}
	first := done[0].Tuning
	if !first.Auto || !first.At.Equal(clk.t) || first.Report.Results != ratings.MinTuneResults || !first.Report.Accepted || !done[0].Rebuilt ||
		!(first.Report.HeldOutAfter < first.Report.HeldOutBefore) || first.Params == off.Tuned() || first.Model != off.Name() {
		t.Fatalf("the first attempt: %+v rebuilt %v", first, done[0].Rebuilt)
	}
	stored, err := svc.Tunings(ctx, "ns2")
	if err != nil || stored["ns2"].Params != first.Params || !stored["ns2"].Auto {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	// Learnt with it from now on.
	r := history[ratings.MinTuneResults]
	rc, err := svc.Record(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ratings.Replay(ratings.WithTuning(off, first.Params), append(withTimes(history[:ratings.MinTuneResults], clk.t), withTimes([]ratings.Result{r}, clk.t)...))
	if err != nil {
		t.Fatal(err)
	}
	if got := rc.Outcome.Updates[0]; got.After != want.Ratings[got.Participant] {
		t.Fatalf("after the tuning, %v learnt %+v, want the tuned replay's %+v", got.Participant, got.After, want.Ratings[got.Participant])
	}
	if done := tick(); len(done) != 0 {
		t.Fatalf("tuned again at %d results: %+v", ratings.MinTuneResults+1, done)
	}
	if testing.Short() || !again {
		return
	}
	record(history[ratings.MinTuneResults+1 : 2*ratings.MinTuneResults])
	done = tick()
	if len(done) != 1 || done[0].Tuning.Report.Results != 2*ratings.MinTuneResults || done[0].Tuning.Report.Default != first.Params {
		t.Fatalf("at %d results: %+v", 2*ratings.MinTuneResults, done)
	}
}

// withTimes is rs ending at t, as the service stamped them.
func withTimes(rs []ratings.Result, t time.Time) []ratings.Result {
	out := make([]ratings.Result, len(rs))
	for i, r := range rs {
		r.EndedAt = t
		out[i] = r
	}
	return out
}

// TestAutoTuneDoesNotWaitForItsInterval: with an hour's interval, a context that reaches
// 2,000 results tunes itself at once: the results recorded nudge the loop.
func TestAutoTuneDoesNotWaitForItsInterval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	tuned := make(chan ratings.AutoTuned, 4)
	go svc.RunAutoTune(ctx, time.Hour, ratings.AutoTune{}, func(at ratings.AutoTuned, err error) {
		if err != nil {
			t.Error(err)
			return
		}
		tuned <- at
	})
	for _, r := range league.Results(league.Simulate(league.Default(4)))[:ratings.MinTuneResults] {
		if _, err := svc.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case at := <-tuned:
		if at.Tuning.Report.Results != ratings.MinTuneResults || !at.Tuning.Auto {
			t.Fatalf("the attempt: %+v", at.Tuning)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no self-tuning within a minute of the 2,000th result")
	}
}

// Replicas share a store: a context whose tuning claim another replica holds is left to it,
// and once that replica has stored its attempt the context is no longer due for the others,
// who used to tune (and rebuild) the same history too.
func TestAutoTuneOnOneReplicaAtATime(t *testing.T) {
	ctx := context.Background()
	store := ratings.NewMemoryStore(nil)
	first := ratings.NewService(store, ratings.DefaultKalman())
	second := ratings.NewService(store, ratings.DefaultKalman())
	for _, r := range withTimes(league.Results(league.Simulate(league.Default(3)))[:ratings.MinTuneResults], time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)) {
		if _, err := first.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	release, claimed, err := store.ClaimTune(ctx, "ns2")
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if _, again, err := store.ClaimTune(ctx, "ns2"); err != nil || again {
		t.Fatalf("a second claim while the first is held: %v %v", again, err)
	}
	if done, err := second.AutoTuneTick(ctx, ratings.AutoTune{}); err != nil || len(done) != 0 {
		t.Fatalf("while another replica holds the claim: %d attempts, %v", len(done), err)
	}
	release()
	if done, err := first.AutoTuneTick(ctx, ratings.AutoTune{}); err != nil || len(done) != 1 {
		t.Fatalf("the claim free: %d attempts, %v", len(done), err)
	}
	if done, err := second.AutoTuneTick(ctx, ratings.AutoTune{}); err != nil || len(done) != 0 {
		t.Fatalf("after the other replica's attempt: %d attempts, %v", len(done), err)
	}
}
