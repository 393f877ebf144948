package queuesvc

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

// tracker keeps the counters of one queue the replica leads, updated as tickets come and go
// (the leader's view), so that a snapshot never scans the tickets.
type tracker struct {
	band     map[string]int8 // searching ticket -> band (-1: backfill)
	owners   map[string]int  // searching tickets (backfills not included) per owner
	tickets  []int           // per band
	players  []int
	backfill int
	seconds  [3600]second  // ring by second of the hour
	waits    []waitSample  // of the window, oldest first
	ordered  []sortedWaits // the same waits in order, per band
	all      sortedWaits   // and of every band
	quality  []qualitySample
	minutes  [hourMinutes]minute // ring by minute of the hour
	recent   []queue.RecentMatch // the last recentCount matches, oldest first
	last     time.Time           // of the last snapshot
	lastPub  time.Time           // of the last publication
}

type second struct {
	start                   int64 // unix second
	matches, fills, expired int32
}

type waitSample struct {
	at   time.Time
	band int8 // -1: a backfill's wait, not summarised
	s    float64
}

type qualitySample struct {
	at time.Time
	q  float64
}

func newTracker() *tracker {
	return &tracker{band: make(map[string]int8), owners: make(map[string]int), tickets: make([]int, len(queue.Bands)),
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

// add counts a ticket that started searching (once per id).
func (k *tracker) add(t queue.Ticket) {
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

// remove uncounts a ticket that stopped searching, and returns its band (false if it was not
// counted).
func (k *tracker) remove(t queue.Ticket) (int8, bool) {
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
func (k *tracker) at(t time.Time) *second {
	u := t.Unix()
	m := &k.seconds[u%3600]
	if m.start != u {
		*m = second{start: u}
	}
	return m
}

// matched records a match (a fill with fill) made at now and its tickets' waits.
func (k *tracker) matched(now time.Time, quality float64, fill bool, waits []waitSample) {
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
func (k *tracker) addWaits(waits []waitSample) {
	for _, w := range waits {
		if w.band >= 0 {
			k.ordered[w.band].add(w.s)
			k.all.add(w.s)
		}
	}
	k.waits = append(k.waits, waits...)
}

func (k *tracker) expired(now time.Time) { k.at(now).expired++ }

// snapshot builds the stats at now; oldest is the oldest searching ticket's creation (zero:
// none).
func (k *tracker) snapshot(queueName string, now, oldest time.Time) *queue.Stats {
	cut := now.Add(-queue.WaitWindow)
	i := 0
	for ; i < len(k.waits) && k.waits[i].at.Before(cut); i++ {
		if w := k.waits[i]; w.band >= 0 {
			k.ordered[w.band].remove(w.s)
			k.all.remove(w.s)
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

// matchedLater records in the stats a match made after its tick (a ready check's, an
// allocator's): the match itself once (quality NaN for its other tickets) and each ticket's
// wait.
func (k *tracker) matchedLater(now time.Time, quality float64, waits []waitSample) {
	if !math.IsNaN(quality) {
		k.matched(now, quality, false, waits)
		return
	}
	k.addWaits(waits)
}
