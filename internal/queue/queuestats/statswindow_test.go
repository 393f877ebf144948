package queuestats

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The ordered window is, after any sequence of adds and removes of values it holds, exactly
// the sorted multiset of what is in it: ties, removals of values added since the last merge,
// merges with nothing new.
func TestSortedWaitsIsTheSortedWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		var w sortedWaits
		var in []float64 // the multiset, in arrival order
		for range 40 {
			for range rng.IntN(30) {
				x := float64(rng.IntN(20)) / 4 // few distinct values: many ties
				w.add(x)
				in = append(in, x)
			}
			for range rng.IntN(len(in) + 1) {
				k := rng.IntN(len(in))
				w.remove(in[k])
				in = slices.Delete(in, k, k+1)
			}
			if rng.IntN(3) > 0 {
				if got, want := w.values(), slices.Sorted(slices.Values(in)); !slices.Equal(got, want) {
					t.Fatalf("round %d: %v, want %v", round, got, want)
				}
			}
		}
	}
}

// A snapshot's wait quantiles, per band and in all, are those of the waits matched within
// WaitWindow, snapshot after snapshot as waits arrive and leave the window.
func TestSnapshotWaitsAreThoseOfTheWindow(t *testing.T) {
	k := NewTracker()
	rng := rand.New(rand.NewPCG(5, 6))
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var every []WaitSample
	for s := 0; s < 3*int(queue.WaitWindow/time.Second); s += 7 {
		now := start.Add(time.Duration(s) * time.Second)
		waits := make([]WaitSample, rng.IntN(12))
		for i := range waits {
			waits[i] = WaitSample{At: now, Band: int8(rng.IntN(len(queue.Bands)+1) - 1), Seconds: float64(rng.IntN(600)) / 10}
		}
		k.Matched(now, 0.5, false, waits)
		every = append(every, waits...)
		if s%3 != 0 {
			continue
		}
		st := k.Snapshot("q", now, time.Time{})
		cut := now.Add(-queue.WaitWindow)
		byBand := make([][]float64, len(queue.Bands))
		var all []float64
		for _, w := range every {
			if w.Band >= 0 && !w.At.Before(cut) {
				byBand[w.Band] = append(byBand[w.Band], w.Seconds)
				all = append(all, w.Seconds)
			}
		}
		want := summariseSorted(slices.Sorted(slices.Values(all)))
		if !slices.Equal(st.Wait.Quantiles, want.Quantiles) || st.Wait.Samples != want.Samples {
			t.Fatalf("at %ds: waits %+v, want %+v", s, st.Wait, want)
		}
		for b := range queue.Bands {
			want := summariseSorted(slices.Sorted(slices.Values(byBand[b])))
			if got := st.Bands[b].Wait; !slices.Equal(got.Quantiles, want.Quantiles) || got.Samples != want.Samples {
				t.Fatalf("at %ds, band %d: %+v, want %+v", s, b, got, want)
			}
		}
	}
}
