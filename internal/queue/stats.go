package queue

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// Band is a rating band of the stats: ratings in [Min, Max) on the matchmaking scale (an
// average player 1000, a stored weight times 20). A party's band is its mean rating's.
type Band struct {
	Name     string
	Min, Max float64 // -Inf and +Inf at the ends
}

// Bands are the stats' rating bands: 100 wide around the average, where most players are
// (the scale's standard deviation is about 100-150), open at both ends: below 700, 700-800,
// ..., 1200-1300, 1300 and above. Fixed, so that dashboards and estimates agree across
// queues and replicas.
var Bands = func() []Band {
	out := []Band{{Name: "<700", Min: math.Inf(-1), Max: 700}}
	for lo := 700.0; lo < 1300; lo += 100 {
		out = append(out, Band{Name: strconv.Itoa(int(lo)) + "-" + strconv.Itoa(int(lo+100)), Min: lo, Max: lo + 100})
	}
	return append(out, Band{Name: ">=1300", Min: 1300, Max: math.Inf(1)})
}()

// BandOf returns the index in Bands of a rating.
func BandOf(rating float64) int {
	for i, b := range Bands {
		if rating < b.Max {
			return i
		}
	}
	return len(Bands) - 1 // NaN never reaches here: ratings are validated finite
}

// The windows of the stats.
const (
	WaitWindow   = 10 * time.Minute // waits and quality of recent matches
	StatsRefresh = time.Second      // the leader rebuilds its snapshot at most this often
	// StatsPublish is how often the leader writes its snapshot to the store, where the other
	// replicas read it (cached for StatsRefresh).
	StatsPublish = 2 * time.Second
)

// Stats is a queue's state as its leader sees it: what is searching now, what happened in the
// last minute and hour, and how long the tickets matched in the last WaitWindow waited.
type Stats struct {
	Queue string
	At    time.Time // when the leader took it
	// Source is "leader" when this replica leads the queue and answered from its own view,
	// "store" when it answered the leader's last published snapshot (up to StatsPublish +
	// StatsRefresh old), "none" when no leader has published one yet.
	Source string

	SearchingTickets   int // backfill tickets not included
	SearchingPlayers   int
	SearchingBackfills int
	OldestWait         time.Duration // of the searching tickets, backfills included

	MatchesLastMinute, MatchesLastHour     int // fills not included
	BackfillsLastMinute, BackfillsLastHour int // fills made
	ExpiredLastMinute, ExpiredLastHour     int

	Wait           WaitSummary // of the tickets matched in the last WaitWindow (backfills not included)
	MeanQuality    float64     // mean average_difference of the matches of the last WaitWindow
	QualitySamples int

	Bands []BandStats // one per Bands entry, in order

	// SearchingByOwner counts the searching tickets (backfills not included) by the key
	// that owns them, for the per-key cap (max_searching_per_key); not served.
	SearchingByOwner map[string]int

	// WaitingOn counts the tickets the leader's last pass left waiting by the rule that
	// stopped them ("interval", "latency" or a rule's name); nil before a pass.
	WaitingOn map[string]int

	// Partition and Leader, in a partitioned queue's partition snapshot, say which partition
	// and which replica (Config.Instance) took it; Partitions, in a partitioned queue's
	// stats, are its partitions' snapshots (partitionstats.go).
	Partition  string  `json:",omitempty"`
	Leader     string  `json:",omitempty"`
	Partitions []Stats `json:",omitempty"`

	// Shadow compares the built-in rules' matches with the match function's in a queue whose
	// function runs in mode shadow (matchfunction_shadow.go); nil otherwise.
	Shadow *ShadowStats
	// FunctionBackoff is the leader's backoff of its match function, so that the next leader
	// takes it on (matchfunction_backoff.go); nil when the last call did not fail. Kept for
	// the replicas, not shown by the API.
	FunctionBackoff *FunctionBackoff `json:",omitempty"`

	// The hour (statshour.go): matches in each of the 60 minutes up to At, oldest first;
	// expiries by reason; the waits of the tickets matched, from a histogram; the last
	// recentCount matches, newest first.
	MatchesPerMinute []int
	ExpiredByReason  map[string]int
	HourWait         WaitSummary
	Recent           []RecentMatch
}

// BandStats is one rating band's part of the stats.
type BandStats struct {
	Band
	SearchingTickets int
	SearchingPlayers int
	Wait             WaitSummary
}

// WaitSummary summarises waits in seconds: Quantiles are the 0th, 5th, ..., 100th
// percentiles (21 values, empty without samples).
type WaitSummary struct {
	Samples   int
	Quantiles []float64
}

// Median and P90 of the waits, false without samples.
func (w WaitSummary) Median() (float64, bool) { return w.q(10) }
func (w WaitSummary) P90() (float64, bool)    { return w.q(18) }

func (w WaitSummary) q(i int) (float64, bool) {
	if len(w.Quantiles) != quantiles {
		return 0, false
	}
	return w.Quantiles[i], true
}

const quantiles = 21

// minSamples is how many waits a band needs for its own estimate; with fewer, the queue's.
const minSamples = 10

// summariseSorted returns the quantiles of waits, in order.
func summariseSorted(waits []float64) WaitSummary {
	if len(waits) == 0 {
		return WaitSummary{}
	}
	out := WaitSummary{Samples: len(waits), Quantiles: make([]float64, quantiles)}
	for i := range quantiles {
		out.Quantiles[i] = quantileSorted(waits, float64(i)/(quantiles-1))
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

// Estimate is how much longer a ticket of rating that has waited waited so far will wait,
// from the recent waits of its band (of the queue's when its band has fewer than 10): the
// median of the waits that were longer than waited, minus waited. The quantiles are a step
// function of 5% steps, interpolated linearly: the conditional median is the quantile at
// (F(waited) + 1) / 2. false when there are no recent waits, or the ticket has waited longer
// than every recent one.
func (s *Stats) Estimate(rating float64, waited time.Duration) (time.Duration, bool) {
	w := s.Wait
	if len(s.Bands) == len(Bands) {
		if b := s.Bands[BandOf(rating)].Wait; b.Samples >= minSamples {
			w = b
		}
	}
	if len(w.Quantiles) != quantiles {
		return 0, false
	}
	x := waited.Seconds()
	f := cdf(w.Quantiles, x)
	if f >= 1 {
		return 0, false
	}
	m := quantileOf(w.Quantiles, (f+1)/2)
	return time.Duration(math.Max(m-x, 0) * float64(time.Second)), true
}

// cdf is the fraction of waits at or below x, by the quantiles (piecewise linear).
func cdf(q []float64, x float64) float64 {
	n := len(q) - 1
	if x < q[0] {
		return 0
	}
	if x >= q[n] {
		return 1
	}
	i := 0
	for i < n && q[i+1] <= x {
		i++
	}
	f := 0.0
	if q[i+1] > q[i] {
		f = (x - q[i]) / (q[i+1] - q[i])
	}
	return (float64(i) + f) / float64(n)
}

// quantileOf interpolates the quantiles at p.
func quantileOf(q []float64, p float64) float64 {
	n := len(q) - 1
	pos := p * float64(n)
	i := int(pos)
	if i >= n {
		return q[n]
	}
	return q[i] + (pos-float64(i))*(q[i+1]-q[i])
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
	recent   []RecentMatch       // the last recentCount matches, oldest first
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
	return &tracker{band: make(map[string]int8), owners: make(map[string]int), tickets: make([]int, len(Bands)),
		players: make([]int, len(Bands)), ordered: make([]sortedWaits, len(Bands))}
}

// bandOfTicket is a ticket's band, -1 for a backfill.
func bandOfTicket(t Ticket) int8 {
	if t.Backfill != nil || len(t.Players) == 0 {
		return -1
	}
	s := 0.0
	for _, p := range t.Players {
		s += p.Rating
	}
	return int8(BandOf(s / float64(len(t.Players))))
}

// add counts a ticket that started searching (once per id).
func (k *tracker) add(t Ticket) {
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
func (k *tracker) remove(t Ticket) (int8, bool) {
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
func (k *tracker) snapshot(queue string, now, oldest time.Time) *Stats {
	cut := now.Add(-WaitWindow)
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

	s := &Stats{Queue: queue, At: now, Source: "leader", SearchingBackfills: k.backfill, Bands: make([]BandStats, len(Bands))}
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
	for b := range Bands {
		s.Bands[b] = BandStats{Band: Bands[b], SearchingTickets: k.tickets[b], SearchingPlayers: k.players[b],
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

// EncodeStats is a snapshot as stores keep it: JSON of the Go struct (a cache the leader
// rewrites every few seconds, never data to migrate), the bands by position.
func EncodeStats(st Stats) ([]byte, error) {
	st.Bands = slices.Clone(st.Bands)
	for i := range st.Bands {
		st.Bands[i].Band = Band{} // their bounds are Bands', and JSON has no infinity
	}
	return json.Marshal(st)
}

// DecodeStats reads what EncodeStats wrote.
func DecodeStats(b []byte) (Stats, error) {
	var st Stats
	if err := json.Unmarshal(b, &st); err != nil {
		return Stats{}, err
	}
	if len(st.Bands) != len(Bands) {
		st.Bands = nil // written with other bands: the queue's totals still hold
	}
	for i := range st.Bands {
		st.Bands[i].Band = Bands[i]
	}
	return st, nil
}

// ShadowWindow is how far back the shadow comparison looks.
const ShadowWindow = 10 * time.Minute

// ShadowStats compares, in a queue whose match function runs in mode shadow, the matches the
// built-in rules made (Rules) with those the function proposed that passed the check
// (Function), over the last Window.
type ShadowStats struct {
	Window         time.Duration
	Rules          ShadowSide
	Function       ShadowSide
	FunctionCalls  int // the calls made in the window (none while backing off)
	FunctionFailed int // of them, those that failed
}

// ShadowSide is one side's matches over the window: how many, the tickets in them, their mean
// team-average difference, the median wait of their tickets (ok false without one), and,
// for the function, the proposals the check rejected by reason.
type ShadowSide struct {
	Matches               int
	TicketsMatched        int
	MeanAverageDifference float64
	MedianWaitS           float64
	HasWait               bool
	Rejected              map[RejectReason]int
}

// FunctionBackoff is a queue's match function's backoff as published: the failures in a row,
// the time before which no call is made, and why the last call failed.
type FunctionBackoff struct {
	Failures int
	Next     time.Time
	Last     string
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
