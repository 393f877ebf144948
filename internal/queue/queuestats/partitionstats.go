package queuestats

import (
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A partitioned queue's stats are its partitions': each partition's leader keeps its own
// (as a queue's leader does) and publishes them with its value and its name; the queue's are
// their sum, and its waits their samples pooled, approximately (from each one's quantiles).

// Partition is the partition value's part of a partitioned queue's stats, ok false
// without one.
func Partition(st queue.Stats, value string) (queue.Stats, bool) {
	i := slices.IndexFunc(st.Partitions, func(p queue.Stats) bool { return p.Partition == value })
	if i < 0 {
		return queue.Stats{}, false
	}
	return st.Partitions[i], true
}

// Merge adds the partitions' stats up into the queue's. Source is "leader" when this
// replica leads every partition, "none" without any.
func Merge(queueName string, parts []queue.Stats, now time.Time) queue.Stats {
	out := queue.Stats{Queue: queueName, At: now, Source: "none", Partitions: parts} // parts not nil: a partitioned queue's
	if len(parts) == 0 {
		return out
	}
	out.Source = "leader"
	out.At = time.Time{}
	var quality float64
	bands := make([][]queue.WaitSummary, len(queue.Bands))
	var waits, hourWaits []queue.WaitSummary
	for _, p := range parts {
		if p.Source != "leader" {
			out.Source = "store"
		}
		if p.At.After(out.At) {
			out.At = p.At
		}
		out.SearchingTickets += p.SearchingTickets
		out.SearchingPlayers += p.SearchingPlayers
		out.SearchingBackfills += p.SearchingBackfills
		out.OldestWait = max(out.OldestWait, p.OldestWait)
		out.MatchesLastMinute += p.MatchesLastMinute
		out.MatchesLastHour += p.MatchesLastHour
		out.BackfillsLastMinute += p.BackfillsLastMinute
		out.BackfillsLastHour += p.BackfillsLastHour
		out.ExpiredLastMinute += p.ExpiredLastMinute
		out.ExpiredLastHour += p.ExpiredLastHour
		quality += p.MeanQuality * float64(p.QualitySamples)
		out.QualitySamples += p.QualitySamples
		out.SearchingByOwner = addCounts(out.SearchingByOwner, p.SearchingByOwner)
		out.WaitingOn = addCounts(out.WaitingOn, p.WaitingOn)
		out.ExpiredByReason = addCounts(out.ExpiredByReason, p.ExpiredByReason)
		if len(out.MatchesPerMinute) < len(p.MatchesPerMinute) {
			out.MatchesPerMinute = append(out.MatchesPerMinute, make([]int, len(p.MatchesPerMinute)-len(out.MatchesPerMinute))...)
		}
		for i, n := range p.MatchesPerMinute {
			out.MatchesPerMinute[i] += n
		}
		out.Recent = append(out.Recent, p.Recent...)
		waits, hourWaits = append(waits, p.Wait), append(hourWaits, p.HourWait)
		if len(p.Bands) == len(queue.Bands) {
			for i, b := range p.Bands {
				bands[i] = append(bands[i], b.Wait)
			}
		}
	}
	if out.QualitySamples > 0 {
		out.MeanQuality = quality / float64(out.QualitySamples)
	}
	out.Wait, out.HourWait = poolWaits(waits), poolWaits(hourWaits)
	out.Bands = mergeBands(parts, bands)
	slices.SortStableFunc(out.Recent, func(a, b queue.RecentMatch) int { return b.At.Compare(a.At) })
	out.Recent = out.Recent[:min(len(out.Recent), recentCount)]
	return out
}

// mergeBands adds the partitions' bands up, their waits pooled.
func mergeBands(parts []queue.Stats, waits [][]queue.WaitSummary) []queue.BandStats {
	out := make([]queue.BandStats, len(queue.Bands))
	for i := range out {
		out[i].Band = queue.Bands[i]
		for _, p := range parts {
			if len(p.Bands) == len(queue.Bands) {
				out[i].SearchingTickets += p.Bands[i].SearchingTickets
				out[i].SearchingPlayers += p.Bands[i].SearchingPlayers
			}
		}
		out[i].Wait = poolWaits(waits[i])
	}
	return out
}

func addCounts(into, from map[string]int) map[string]int {
	if len(from) == 0 {
		return into
	}
	if into == nil {
		into = make(map[string]int, len(from))
	}
	for k, n := range from {
		into[k] += n
	}
	return into
}

// poolWaits is the summary of the summaries' samples taken together, approximately: each
// one's distribution is linear between its quantiles, and the pooled quantiles are where
// their sum, weighted by samples, crosses each level.
func poolWaits(ws []queue.WaitSummary) queue.WaitSummary {
	ws = slices.DeleteFunc(slices.Clone(ws), func(w queue.WaitSummary) bool { return w.Samples == 0 || len(w.Quantiles) != queue.WaitQuantiles })
	switch len(ws) {
	case 0:
		return queue.WaitSummary{}
	case 1:
		return ws[0]
	}
	out := queue.WaitSummary{Quantiles: make([]float64, queue.WaitQuantiles)}
	lo, hi := ws[0].Quantiles[0], ws[0].Quantiles[queue.WaitQuantiles-1]
	for _, w := range ws {
		out.Samples += w.Samples
		lo, hi = min(lo, w.Quantiles[0]), max(hi, w.Quantiles[queue.WaitQuantiles-1])
	}
	below := func(x float64) float64 { // the pooled share of samples at or below x
		sum := 0.0
		for _, w := range ws {
			sum += float64(w.Samples) * cdfOf(w.Quantiles, x)
		}
		return sum / float64(out.Samples)
	}
	for k := range queue.WaitQuantiles {
		level := float64(k) / float64(queue.WaitQuantiles-1)
		a, b := lo, hi
		for range 50 {
			m := (a + b) / 2
			if below(m) < level {
				a = m
			} else {
				b = m
			}
		}
		out.Quantiles[k] = b
	}
	out.Quantiles[0], out.Quantiles[queue.WaitQuantiles-1] = lo, hi
	return out
}

// cdfOf is the share of a summary's samples at or below x, linear between its quantiles.
func cdfOf(q []float64, x float64) float64 {
	n := len(q) - 1
	switch {
	case x < q[0]:
		return 0
	case x >= q[n]:
		return 1
	}
	i := 0
	for i < n && q[i+1] <= x {
		i++
	}
	if q[i+1] == q[i] {
		return float64(i+1) / float64(n)
	}
	return (float64(i) + (x-q[i])/(q[i+1]-q[i])) / float64(n)
}
