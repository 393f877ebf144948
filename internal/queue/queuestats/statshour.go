package queuestats

import (
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// This file holds the hour's view of the stats that the console charts: matches per minute,
// expiries by reason, the waits of the hour as a histogram, and the last matches.

// Waits of the hour are counted in a histogram per minute rather than kept one by one, so a
// busy queue's hour costs the same memory as a quiet one's: bucket 0 holds waits below
// waitBase, bucket i >= 1 those in [waitBase*waitGrowth^(i-1), waitBase*waitGrowth^i), the
// last one everything above (past a day, longer than any ticket lives). A percentile is
// interpolated inside its bucket, so it is within a bucket's width (19%) of the exact one.
const (
	waitBase        = 0.1 // seconds
	hourWaitBuckets = 82  // 0.1 s * 2^(80/4) is 29 h
	recentCount     = 10  // matches kept in Stats.Recent
	hourMinutes     = int64(time.Hour / time.Minute)
)

var waitGrowth = math.Pow(2, 0.25)

// waitBucket is the histogram bucket of a wait of s seconds.
func waitBucket(s float64) int {
	if !(s >= waitBase) {
		return 0
	}
	return min(1+int(math.Log2(s/waitBase)*4), hourWaitBuckets-1)
}

// bucketBounds are the bounds of bucket i (the last one is closed at a day).
func bucketBounds(i int) (lo, hi float64) {
	if i == 0 {
		return 0, waitBase
	}
	return waitBase * math.Pow(waitGrowth, float64(i-1)), waitBase * math.Pow(waitGrowth, float64(i))
}

// minute is one minute of the hour: its waits and its expiries by reason.
type minute struct {
	start   int64 // unix minute
	waits   [hourWaitBuckets]int32
	expired map[string]int32
}

func newRecentMatch(m queue.Match) queue.RecentMatch {
	r := queue.RecentMatch{ID: m.ID, At: m.CreatedAt, Region: m.Region, AverageDifference: m.AverageDifference,
		Teams: make([][]string, len(m.Teams)), Averages: make([]float64, len(m.Teams))}
	for i, t := range m.Teams {
		r.Teams[i] = make([]string, len(t.Players))
		for j, p := range t.Players {
			r.Teams[i][j] = p.ID
		}
		if len(t.Players) > 0 {
			r.Averages[i] = t.RatingTotal / float64(len(t.Players))
		}
	}
	return r
}

// minuteAt returns the ring's minute of t, cleared if it held an older minute; nil if it
// holds a newer one (the clock went back an hour: t's minute is no longer counted).
func (k *Tracker) minuteAt(t time.Time) *minute {
	u := t.Unix() / 60
	m := &k.minutes[u%hourMinutes]
	if m.start > u {
		return nil
	}
	if m.start != u {
		*m = minute{start: u}
	}
	return m
}

// HourMatched records a match's waits and keeps it among the recent ones.
func (k *Tracker) HourMatched(now time.Time, m queue.Match, waits []WaitSample) {
	if m.BackfillOf != "" {
		return
	}
	if len(k.recent) == recentCount {
		k.recent = slices.Delete(k.recent, 0, 1)
	}
	k.recent = append(k.recent, newRecentMatch(m))
	mm := k.minuteAt(now)
	for _, w := range waits {
		if w.Band >= 0 && mm != nil {
			mm.waits[waitBucket(w.Seconds)]++
		}
	}
}

// HourExpired counts a ticket expired at now for reason among the hour's.
func (k *Tracker) HourExpired(now time.Time, reason string) {
	m := k.minuteAt(now)
	if m == nil {
		return
	}
	if m.expired == nil {
		m.expired = make(map[string]int32)
	}
	m.expired[reason]++
}

// hour fills the hour's part of s at now.
func (k *Tracker) hour(s *queue.Stats, now time.Time) {
	u := now.Unix()
	s.MatchesPerMinute = make([]int, hourMinutes)
	for _, m := range k.seconds {
		if ago := u - m.start; ago >= 0 && ago < 3600 {
			s.MatchesPerMinute[hourMinutes-1-ago/60] += int(m.matches)
		}
	}
	var hist [hourWaitBuckets]int64
	s.ExpiredByReason = map[string]int{}
	for i := range k.minutes {
		m := &k.minutes[i]
		if m.start > u/60 || m.start <= u/60-hourMinutes {
			continue
		}
		for b, n := range m.waits {
			hist[b] += int64(n)
		}
		for reason, n := range m.expired {
			s.ExpiredByReason[reason] += int(n)
		}
	}
	s.HourWait = summariseHistogram(hist[:])
	s.Recent = make([]queue.RecentMatch, len(k.recent))
	for i, r := range k.recent {
		s.Recent[len(k.recent)-1-i] = r // newest first
	}
}

// summariseHistogram is the 21 quantiles of a wait histogram, interpolated inside buckets
// (geometrically but for the first, which starts at 0).
func summariseHistogram(hist []int64) queue.WaitSummary {
	var n int64
	for _, c := range hist {
		n += c
	}
	if n == 0 {
		return queue.WaitSummary{}
	}
	out := queue.WaitSummary{Samples: int(n), Quantiles: make([]float64, queue.WaitQuantiles)}
	for q := range queue.WaitQuantiles {
		rank := float64(q) / (queue.WaitQuantiles - 1) * float64(n) // how many waits lie below
		var seen int64
		for b, c := range hist {
			if c == 0 || float64(seen+c) < rank {
				seen += c
				continue
			}
			lo, hi := bucketBounds(b)
			f := min(max((rank-float64(seen))/float64(c), 0), 1)
			if b == 0 {
				out.Quantiles[q] = hi * f
			} else {
				out.Quantiles[q] = lo * math.Pow(hi/lo, f)
			}
			break
		}
	}
	return out
}
