package queue

import (
	"cmp"
	"encoding/json"
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
	// stats, are its partitions' snapshots (queuestats/partitionstats.go).
	Partition  string  `json:",omitempty"`
	Leader     string  `json:",omitempty"`
	Partitions []Stats `json:",omitempty"`

	// Shadow compares the built-in rules' matches with the match function's in a queue whose
	// function runs in mode shadow (queueleader/matchfunction_shadow.go); nil otherwise.
	Shadow *ShadowStats
	// FunctionBackoff is the leader's backoff of its match function, so that the next leader
	// takes it on (queueleader/matchfunction_backoff.go); nil when the last call did not fail. Kept for
	// the replicas, not shown by the API.
	FunctionBackoff *FunctionBackoff `json:",omitempty"`

	// The hour (queuestats/statshour.go): matches in each of the 60 minutes up to At, oldest first;
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
	if len(w.Quantiles) != WaitQuantiles {
		return 0, false
	}
	return w.Quantiles[i], true
}

// WaitQuantiles is how many quantiles a WaitSummary holds: the 0th, 5th, ..., 100th percentiles.
const WaitQuantiles = 21

// minSamples is how many waits a band needs for its own estimate; with fewer, the queue's.
const minSamples = 10

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
	if len(w.Quantiles) != WaitQuantiles {
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

// EncodeStats is a snapshot as stores keep it: JSON of the Go struct (a cache the leader
// rewrites every few seconds, never data to migrate), the bands by position.
func EncodeStats(st Stats) ([]byte, error) {
	st.Bands = slices.Clone(st.Bands)
	for i := range st.Bands {
		st.Bands[i].Band = Band{} // their bounds are Bands', and JSON has no infinity
	}
	return json.Marshal(st)
}

// DecodePublished reads what a store kept of a queue's published stats (EncodeStats, one
// document each of the queue and its partitions), in the order PublishedStats returns them:
// by Partition, the queue's own ("") first.
func DecodePublished(docs [][]byte) ([]Stats, error) {
	out := make([]Stats, 0, len(docs))
	for _, b := range docs {
		st, err := DecodeStats(b)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b Stats) int { return cmp.Compare(a.Partition, b.Partition) })
	return out, nil
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

// RecentMatch is one of a queue's last matches as the stats show them (fills not included).
type RecentMatch struct {
	ID                string
	At                time.Time
	Region            string
	Teams             [][]string // player ids, by team
	Averages          []float64  // each team's average rating
	AverageDifference float64
	// WinProbability is each team's, by the queue's rating model from the stored ratings (as
	// POST /v1/predict answers), set by Service.Stats when it can ask; nil otherwise.
	WinProbability []float64 `json:",omitempty"`
}
