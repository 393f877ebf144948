// Package queuestats keeps a queue's stats as its leader sees them: the Tracker the tick loop
// updates as tickets come and go and takes snapshots of (the window's waits kept in order,
// the hour by minute), and the merge of a partitioned queue's partitions' snapshots.
package queuestats

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// summariseSorted returns the quantiles of waits, in order.
func summariseSorted(waits []float64) queue.WaitSummary {
	if len(waits) == 0 {
		return queue.WaitSummary{}
	}
	out := queue.WaitSummary{Samples: len(waits), Quantiles: make([]float64, queue.WaitQuantiles)}
	for i := range queue.WaitQuantiles {
		out.Quantiles[i] = quantileSorted(waits, float64(i)/(queue.WaitQuantiles-1))
	}
	return out
}

// quantileSorted is the p-quantile of sorted xs, interpolated between ranks.
func quantileSorted(xs []float64, p float64) float64 {
	pos := p * float64(len(xs)-1)
	lo := int(pos)
	if lo >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	f := pos - float64(lo)
	return xs[lo] + f*(xs[lo+1]-xs[lo])
}

// Tracker keeps the counters of one queue the replica leads, updated as tickets come and go
// (the leader's view), so that a snapshot never scans the tickets.
type Tracker struct {
	band     map[string]int8 // searching ticket -> band (-1: backfill)
	owners   map[string]int  // searching tickets (backfills not included) per owner
	tickets  []int           // per band
	players  []int
	backfill int
	seconds  [3600]second  // ring by second of the hour
	waits    []WaitSample  // of the window, oldest first
	ordered  []sortedWaits // the same waits in order, per band
	all      sortedWaits   // and of every band
	quality  []qualitySample
	minutes  [hourMinutes]minute // ring by minute of the hour
	recent   []queue.RecentMatch // the last recentCount matches, oldest first
}

type second struct {
	start                   int64 // unix second
	matches, fills, expired int32
}

// WaitSample is a matched ticket's wait: when it was matched, its band and how long it
// waited, in seconds.
type WaitSample struct {
	At      time.Time
	Band    int8 // -1: a backfill's wait, not summarised
	Seconds float64
}

type qualitySample struct {
	at time.Time
	q  float64
}

// NewTracker is a Tracker of a queue that has no tickets yet.
func NewTracker() *Tracker {
	return &Tracker{band: make(map[string]int8), owners: make(map[string]int), tickets: make([]int, len(queue.Bands)),
		players: make([]int, len(queue.Bands)), ordered: make([]sortedWaits, len(queue.Bands))}
}

// bandOfTicket is a ticket's band, -1 for a backfill.
func bandOfTicket(t queue.Ticket) int8 {
	if t.Backfill != nil || len(t.Players) == 0 {
		return -1
	}
	s := 0.0
	for _, p := range t.Players {
		s += p.Rating
	}
	return int8(queue.BandOf(s / float64(len(t.Players))))
}

// Add counts a ticket that started searching (once per id).
func (k *Tracker) Add(t queue.Ticket) {
	if _, ok := k.band[t.ID]; ok {
		return
	}
	b := bandOfTicket(t)
	k.band[t.ID] = b
	if b < 0 {
		k.backfill++
		return
	}
	k.tickets[b]++
	k.players[b] += len(t.Players)
	k.owners[t.Owner]++
}

// Remove uncounts a ticket that stopped searching, and returns its band (false if it was not
// counted).
func (k *Tracker) Remove(t queue.Ticket) (int8, bool) {
	b, ok := k.band[t.ID]
	if !ok {
		return 0, false
	}
	delete(k.band, t.ID)
	if b < 0 {
		k.backfill--
	} else {
		k.tickets[b]--
		k.players[b] -= len(t.Players)
		if k.owners[t.Owner]--; k.owners[t.Owner] <= 0 {
			delete(k.owners, t.Owner)
		}
	}
	return b, true
}

// at returns the bucket of t's second, cleared if it held an older second.
func (k *Tracker) at(t time.Time) *second {
	u := t.Unix()
	m := &k.seconds[u%3600]
	if m.start != u {
		*m = second{start: u}
	}
	return m
}

// Matched records a match (a fill with fill) made at now and its tickets' waits.
func (k *Tracker) Matched(now time.Time, quality float64, fill bool, waits []WaitSample) {
	m := k.at(now)
	if fill {
		m.fills++
	} else {
		m.matches++
		k.quality = append(k.quality, qualitySample{now, quality})
	}
	k.addWaits(waits)
}

// addWaits records matched tickets' waits; a backfill's (band -1) is kept for the hour's
// counts only.
func (k *Tracker) addWaits(waits []WaitSample) {
	for _, w := range waits {
		if w.Band >= 0 {
			k.ordered[w.Band].add(w.Seconds)
			k.all.add(w.Seconds)
		}
	}
	k.waits = append(k.waits, waits...)
}

// Expired counts a ticket expired at now.
func (k *Tracker) Expired(now time.Time) { k.at(now).expired++ }

// Snapshot builds the stats at now; oldest is the oldest searching ticket's creation (zero:
// none).
func (k *Tracker) Snapshot(queueName string, now, oldest time.Time) *queue.Stats {
	cut := now.Add(-queue.WaitWindow)
	i := 0
	for ; i < len(k.waits) && k.waits[i].At.Before(cut); i++ {
		if w := k.waits[i]; w.Band >= 0 {
			k.ordered[w.Band].remove(w.Seconds)
			k.all.remove(w.Seconds)
		}
	}
	k.waits = k.waits[i:] // the next append that needs room copies only what is left
	i = 0
	for i < len(k.quality) && k.quality[i].at.Before(cut) {
		i++
	}
	k.quality = slices.Delete(k.quality, 0, i)

	s := &queue.Stats{Queue: queueName, At: now, Source: "leader", SearchingBackfills: k.backfill, Bands: make([]queue.BandStats, len(queue.Bands))}
	if len(k.owners) > 0 {
		s.SearchingByOwner = maps.Clone(k.owners)
	}
	if !oldest.IsZero() {
		s.OldestWait = max(now.Sub(oldest), 0)
	}
	u := now.Unix()
	for _, m := range k.seconds {
		if m.start > u || m.start <= u-3600 {
			continue
		}
		s.MatchesLastHour += int(m.matches)
		s.BackfillsLastHour += int(m.fills)
		s.ExpiredLastHour += int(m.expired)
		if m.start > u-60 {
			s.MatchesLastMinute += int(m.matches)
			s.BackfillsLastMinute += int(m.fills)
			s.ExpiredLastMinute += int(m.expired)
		}
	}
	for b := range queue.Bands {
		s.Bands[b] = queue.BandStats{Band: queue.Bands[b], SearchingTickets: k.tickets[b], SearchingPlayers: k.players[b],
			Wait: summariseSorted(k.ordered[b].values())}
		s.SearchingTickets += k.tickets[b]
		s.SearchingPlayers += k.players[b]
	}
	s.Wait = summariseSorted(k.all.values())
	k.hour(s, now)
	for _, q := range k.quality {
		s.MeanQuality += q.q
	}
	if s.QualitySamples = len(k.quality); s.QualitySamples > 0 {
		s.MeanQuality /= float64(s.QualitySamples)
	}
	return s
}

// MatchedLater records in the stats a match made after its tick (a ready check's, an
// allocator's): the match itself once (quality NaN for its other tickets) and each ticket's
// wait.
func (k *Tracker) MatchedLater(now time.Time, quality float64, waits []WaitSample) {
	if !math.IsNaN(quality) {
		k.Matched(now, quality, false, waits)
		return
	}
	k.addWaits(waits)
}
