package ratings_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// restClock is self-tuning's pacing clock in a test: the work takes real time, a rest none,
// but the clock moves past it as if it had been taken.
type restClock struct {
	mu     sync.Mutex
	rested time.Duration
	rests  int
}

func (c *restClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.rested)
}

func (c *restClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rested += d
	c.rests++
	return ctx.Err()
}

// tunableService is a service over its own store holding the first MinTuneResults results
// of league l, learning with a model whose defaults are far off them (the fit is kept).
func tunableService(t *testing.T, l uint64) *ratings.Service {
	t.Helper()
	off := ratings.DefaultKalman()
	off.SkillSD, off.SkillDrift, off.BiasPrior = 0.5, 0.01, 1000
	svc := ratings.NewService(ratings.NewMemoryStore(nil), off)
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	svc.SetClock(func() time.Time { return at })
	for _, r := range withTimes(league.Results(league.Simulate(league.Default(l)))[:ratings.MinTuneResults], at) {
		if _, err := svc.Record(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

// Self-tuning at a share of 0.25 rests three times as long as it worked, after each replay
// and after the rebuild, so that it keeps a quarter of a core busy at most; and it keeps the
// tuning it keeps unpaced.
func TestAutoTunePacesItselfToItsShare(t *testing.T) {
	ctx := context.Background()
	unpaced, paced := tunableService(t, 3), tunableService(t, 3)
	want, err := unpaced.AutoTuneTick(ctx, ratings.AutoTune{Rebuild: true, Share: 1})
	if err != nil || len(want) != 1 || want[0].Paced != 0 {
		t.Fatalf("unpaced: %+v, %v", want, err)
	}
	clk := &restClock{}
	paced.SetPaceClock(clk.now, clk.sleep)
	start := time.Now()
	got, err := paced.AutoTuneTick(ctx, ratings.AutoTune{Rebuild: true, Share: 0.25})
	worked := time.Since(start)
	if err != nil || len(got) != 1 {
		t.Fatalf("paced: %+v, %v", got, err)
	}
	if !reflect.DeepEqual(got[0].Tuning, want[0].Tuning) || got[0].Rebuilt != want[0].Rebuilt || !got[0].Rebuilt {
		t.Fatalf("paced: %+v rebuilt %v\nunpaced: %+v rebuilt %v", got[0].Tuning, got[0].Rebuilt, want[0].Tuning, want[0].Rebuilt)
	}
	if n := got[0].Tuning.Report.Evaluations + 1; clk.rests != n {
		t.Fatalf("%d rests, want one after each of the %d replays and one after the rebuild", clk.rests, n-1)
	}
	if got[0].Paced != clk.rested {
		t.Fatalf("reported %s paced, rested %s", got[0].Paced, clk.rested)
	}
	// The rests follow stretches of the tick's own work: together at most 3 times it (a
	// nanosecond of rounding a rest), and at least 3 times the most of it they cover.
	if most := 3*worked + time.Duration(clk.rests); clk.rested > most || clk.rested < most*9/10 {
		t.Fatalf("rested %s for %s of work, want 3 times as long", clk.rested, worked)
	}
}

// A rest ends with the context (a shutdown is not held up by it), and the attempt with it:
// nothing is stored.
func TestAutoTuneRestEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := tunableService(t, 3)
	var rests int
	svc.SetPaceClock(time.Now, func(ctx context.Context, d time.Duration) error {
		rests++
		cancel()
		return ratings.SleepCtx(ctx, time.Hour)
	})
	type tick struct {
		done []ratings.AutoTuned
		err  error
	}
	ended := make(chan tick, 1)
	go func() {
		done, err := svc.AutoTuneTick(ctx, ratings.AutoTune{Rebuild: true, Share: 0.25})
		ended <- tick{done, err}
	}()
	select {
	case tk := <-ended:
		if !errors.Is(tk.err, context.Canceled) || len(tk.done) != 0 || rests != 1 {
			t.Fatalf("the tick: %+v, %v after %d rests; want context.Canceled after the first", tk.done, tk.err, rests)
		}
	case <-time.After(time.Minute):
		t.Fatal("the tick still resting a minute after its context ended")
	}
	stored, err := svc.Tunings(context.Background(), "ns2")
	if err != nil || len(stored) != 0 {
		t.Fatalf("stored after the cancel: %+v, %v", stored, err)
	}
}
