package queuestats

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The hour's percentiles, read from the histogram, are within a bucket's width (19%) of the
// exact ones, across waits from tenths of a second to minutes.
func TestHourWaitPercentilesAreWithinABucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var hist [hourWaitBuckets]int64
	waits := make([]float64, 5000)
	for i := range waits {
		waits[i] = math.Exp(rng.NormFloat64()*1.5 + 2) // median e^2 = 7.4 s, p99 ~ 240 s
		hist[waitBucket(waits[i])]++
	}
	got := summariseHistogram(hist[:])
	exact := summariseSorted(slices.Sorted(slices.Values(waits)))
	if got.Samples != len(waits) {
		t.Fatalf("samples %d", got.Samples)
	}
	for q := 1; q < queue.WaitQuantiles-1; q++ { // the extremes are a single sample, not a rank
		if r := got.Quantiles[q] / exact.Quantiles[q]; r < 1/waitGrowth || r > waitGrowth {
			t.Errorf("quantile %d%%: %.3g, exact %.3g", q*5, got.Quantiles[q], exact.Quantiles[q])
		}
	}
	if w := (queue.WaitSummary{}); len(summariseHistogram(make([]int64, hourWaitBuckets)).Quantiles) != len(w.Quantiles) {
		t.Error("an empty histogram has quantiles")
	}
}

// The hour puts each match in its minute, counts expiries by reason, forgets what is older
// than an hour, and keeps the last 10 matches (fills not included), newest first.
func TestTrackerHour(t *testing.T) {
	k := NewTracker()
	now := time.Unix(1_800_000_000, 0)
	match := func(at time.Time, id string, fill bool) {
		m := queue.Match{ID: id, CreatedAt: at, AverageDifference: 5, Teams: []queue.MatchTeam{
			{Players: []queue.MatchPlayer{{ID: id + "a"}, {ID: id + "b"}}, RatingTotal: 2000},
			{Players: []queue.MatchPlayer{{ID: id + "c"}, {ID: id + "d"}}, RatingTotal: 2010}}}
		if fill {
			m.BackfillOf = "running"
		}
		w := []WaitSample{{At: at, Band: 4, Seconds: 10}, {At: at, Band: 4, Seconds: 20}}
		k.Matched(at, m.AverageDifference, fill, w)
		k.HourMatched(at, m, w)
	}
	match(now.Add(-2*time.Hour), "old", false)
	for i := range 12 {
		match(now.Add(-90*time.Second), "m"+strconv.Itoa(i), false)
	}
	match(now.Add(-10*time.Second), "last", false)
	match(now.Add(-5*time.Second), "fill", true)
	k.HourExpired(now.Add(-30*time.Second), "ttl")
	k.HourExpired(now.Add(-30*time.Minute), "ttl")
	k.HourExpired(now.Add(-time.Second), "no_region")
	k.HourExpired(now.Add(-61*time.Minute), "invalid")

	s := k.Snapshot("q", now, time.Time{})
	want := make([]int, 60)
	want[58], want[59] = 12, 1
	if !slices.Equal(s.MatchesPerMinute, want) {
		t.Errorf("matches per minute %v", s.MatchesPerMinute)
	}
	if len(s.ExpiredByReason) != 2 || s.ExpiredByReason["ttl"] != 2 || s.ExpiredByReason["no_region"] != 1 {
		t.Errorf("expired by reason %v", s.ExpiredByReason)
	}
	if s.HourWait.Samples != 26 {
		t.Errorf("the hour's waits: %d samples, want 26 (13 matches of the hour, 2 tickets each)", s.HourWait.Samples)
	}
	if len(s.Recent) != recentCount || s.Recent[0].ID != "last" || s.Recent[1].ID != "m11" || s.Recent[9].ID != "m3" {
		t.Fatalf("recent %+v", s.Recent)
	}
	r := s.Recent[0]
	if !slices.Equal(r.Teams[1], []string{"lastc", "lastd"}) || r.Averages[0] != 1000 || r.Averages[1] != 1005 || r.AverageDifference != 5 {
		t.Errorf("recent match %+v", r)
	}
	// A snapshot goes through the store as JSON and comes back whole.
	b, err := queue.EncodeStats(*s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := queue.DecodeStats(b)
	if err != nil || !slices.Equal(back.MatchesPerMinute, want) || back.Recent[0].ID != "last" || back.HourWait.Samples != 26 {
		t.Errorf("decoded %+v, %v", back, err)
	}
}
