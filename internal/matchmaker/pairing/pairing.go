package pairing

import (
	"math"
	"slices"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Strategy chooses how Make builds a match from the queue.
type Strategy string

const (
	// GreedyPairs is the thesis's rule, faithfully: the oldest unmatched player takes
	// the nearest unmatched player within a widening interval as opponent; the pair joins
	// the match under construction until it has TeamSize pairs.
	GreedyPairs Strategy = "greedy_pairs"
	// RatingWindow (the default) takes the oldest unmatched player and the
	// 2*TeamSize-1 unmatched players nearest to it, pairs them adjacently in rating order
	// and splits every pair across the teams so that the team totals differ the least.
	RatingWindow Strategy = "rating_window"
)

// Limits of the options and ratings. MaxMagnitude keeps every difference, total and
// interval the algorithm computes finite (so that it can always be written as JSON).
const (
	MaxTeamSize  = 16
	MaxMagnitude = 1e300
)

// Interval is the widening rating interval: a pair is accepted at the first value of the
// sequence Initial, Initial+Step, Initial+2*Step, ... that covers its rating difference.
// The k-th value is computed in float64 as Initial + k*Step (not by repeated addition).
// Max = math.Inf(1) means the interval widens without limit; the zero value of Max is a
// real limit of 0, so a Go caller wanting "no max" must say so.
type Interval struct {
	Initial float64
	Step    float64
	Max     float64
}

// Options configures Make.
type Options struct {
	TeamSize int // players per team, 1..MaxTeamSize
	Interval Interval
	Strategy Strategy
}

// DefaultOptions returns the thesis's settings (5v5, interval +-25 widening by 25
// without limit) with the rating_window strategy.
func DefaultOptions() Options {
	return Options{
		TeamSize: 5,
		Interval: Interval{Initial: 25, Step: 25, Max: math.Inf(1)},
		Strategy: RatingWindow,
	}
}

// Validate reports every invalid option as one apperr.Invalid error naming the options
// team_size, interval.initial, interval.step, interval.max and strategy.
func (o Options) Validate() error {
	var f apperr.Fields
	o.addFaults(&f)
	return f.Err()
}

func (o Options) addFaults(f *apperr.Fields) {
	if o.TeamSize < 1 || o.TeamSize > MaxTeamSize {
		f.Add("team_size", "must be between 1 and %d", MaxTeamSize)
	}
	in := o.Interval
	initialOK := in.Initial >= 0 && in.Initial <= MaxMagnitude
	if !initialOK {
		f.Add("interval.initial", "must be a finite number between 0 and %g", MaxMagnitude)
	}
	if !(in.Step > 0 && in.Step <= MaxMagnitude) {
		f.Add("interval.step", "must be a finite number greater than 0 and at most %g", MaxMagnitude)
	}
	switch {
	case math.IsInf(in.Max, 1):
		// no limit
	case !(in.Max >= 0 && in.Max <= MaxMagnitude):
		f.Add("interval.max", "must be a finite number between 0 and %g, or absent for no limit", MaxMagnitude)
	case initialOK && in.Max < in.Initial:
		f.Add("interval.max", "must be at least interval.initial (%g)", in.Initial)
	}
	switch o.Strategy {
	case GreedyPairs, RatingWindow:
	default:
		f.Add("strategy", "must be %q or %q", RatingWindow, GreedyPairs)
	}
}

// Pair is two opponents of near-equal rating, one on each team.
type Pair struct {
	Players    [2]int  // queue indices; Players[0] plays on team 0, Players[1] on team 1
	Difference float64 // |rating difference|
	// Interval is the value of the widening sequence at which the pair was accepted: the
	// smallest one >= Difference. Difference <= Interval always holds.
	Interval float64
}

// Team is one side of a match.
type Team struct {
	Players     []int // queue indices, in the order of the match's Pairs
	RatingTotal float64
}

// Match is TeamSize pairs split across two teams.
type Match struct {
	Teams [2]Team
	// Pairs: for greedy_pairs in the order they were formed (Players[0] of each was the
	// anchor); for rating_window in ascending rating order.
	Pairs []Pair
	// Interval is the widest interval used to build the match: the largest pair Interval
	// and, for rating_window, the window around the anchor.
	Interval          float64
	SkillDifference   float64 // |Teams[0].RatingTotal - Teams[1].RatingTotal|
	AverageDifference float64 // SkillDifference / TeamSize: the thesis's "skill rating difference"
}

// Result is the outcome of Make. Every queue index appears exactly once, either in a match
// or in Unmatched.
type Result struct {
	Matches   []Match
	Unmatched []int // queue indices, ascending
}

// Make builds matches from a queue. ratings[i] is the rating of the player at queue
// position i; position 0 has waited longest. It returns an apperr.Invalid error naming
// every invalid option (see Validate) and every rating that is not a finite number within
// +-MaxMagnitude (ratings[i]).
//
// Both strategies repeatedly take the oldest unmatched player as the anchor, widen the
// interval around it along the sequence Initial, Initial+Step, ... and break ties of rating
// distance in favour of the player who has waited longer. Distances are compared exactly
// (not after rounding), so the nearest player is the nearest on the real line.
//
// greedy_pairs: the anchor's opponent is the nearest unmatched player; the pair's Interval
// is the first value of the sequence that covers their difference. If that exceeds
// Interval.Max the anchor leaves the queue unmatched and the next oldest player anchors.
// The anchor plays on team 0; a match is complete at TeamSize pairs. When the players left
// cannot complete the match under construction, it is dissolved and they are all
// unmatched.
//
// rating_window: the anchor and the 2*TeamSize-1 unmatched players nearest to it (the
// window is the first value of the sequence covering the farthest of them) are sorted by
// rating and paired adjacently; each pair is split across the teams so that the team
// totals differ the least (exactly, over all 2^(TeamSize-1) ways with the anchor on team
// 0; among equally balanced ways, the one whose binary number — bit i set when the i-th
// pair in rating order, the anchor's skipped, puts its higher-rated player on team 0 — is
// smallest). If the window or any pair's Interval exceeds Interval.Max the anchor leaves
// the queue unmatched. When fewer than 2*TeamSize unmatched players remain they are all
// unmatched. The balance is computed incrementally in float64, so "least" holds up to
// rounding (about 1e-15 of the ratings' magnitude per pair).
//
// It runs in O(N log N) time (a sort, then O(TeamSize) work per player, plus the
// 2^(TeamSize-1) balance search per rating_window match) and O(N) memory.
func Make(ratings []float64, opts Options) (Result, error) {
	var f apperr.Fields
	opts.addFaults(&f)
	for i, r := range ratings {
		if !(math.Abs(r) <= MaxMagnitude) { // false for NaN too
			f.Add("ratings["+strconv.Itoa(i)+"]", "must be a finite number between %g and %g",
				-MaxMagnitude, MaxMagnitude)
		}
	}
	if err := f.Err(); err != nil {
		return Result{}, err
	}
	if len(ratings) > math.MaxInt32 {
		return Result{}, apperr.New(apperr.TooLarge, "at most %d players can be matched at once", math.MaxInt32)
	}
	p := newQueue(ratings, opts)
	if opts.Strategy == GreedyPairs {
		p.greedyPairs()
	} else {
		p.ratingWindow()
	}
	return p.result(), nil
}

// step returns the smallest value v of the widening sequence Initial + k*Step
// (k = 0, 1, 2, ...; each value computed as Initial + float64(k*Step)) with v >= d, and its
// k. The values are nondecreasing in k, so the answer is found in closed form, corrected
// for rounding by a short search, whatever the ratio of d to Step.
//
// Beyond k = 2^53 not every integer is a float64; k is then the smallest float64 integer
// that works. If (d-Initial)/Step overflows float64, Step is below the resolution of d and
// the exact smallest sequence value >= d rounds to d itself: it returns (+Inf, d).
func (iv Interval) step(d float64) (k, v float64) {
	if d <= iv.Initial {
		return 0, iv.Initial
	}
	q := math.Ceil((d - iv.Initial) / iv.Step)
	if math.IsInf(q, 1) {
		return q, d
	}
	// Bracket the answer: at(lo) < d <= at(hi), starting from the estimate q and moving by
	// doubling gaps (a gap below the spacing of float64 integers near q moves nothing, and
	// doubles).
	var lo, hi float64
	if iv.at(q) >= d {
		hi = q
		for gap := 1.0; ; gap *= 2 {
			c := max(hi-gap, 0)
			if iv.at(c) < d { // at(0) = Initial < d, so this ends
				lo = c
				break
			}
			hi = c
		}
	} else {
		lo = q
		for gap := 1.0; ; gap *= 2 {
			c := lo + gap
			if iv.at(c) >= d {
				hi = c
				break
			}
			lo = c
		}
	}
	for {
		m := math.Floor(lo + (hi-lo)/2)
		if m <= lo || m >= hi {
			return hi, iv.at(hi)
		}
		if iv.at(m) >= d {
			hi = m
		} else {
			lo = m
		}
	}
}

// at is the k-th value of the sequence. The explicit conversion forbids fusing the
// multiply-add, so every platform computes the same value.
func (iv Interval) at(k float64) float64 {
	return iv.Initial + float64(k*iv.Step)
}

// Distribution summarises a list of values; all zero for an empty list.
type Distribution struct {
	Mean, Median, Max float64
}

// Summary describes a set of matches: the distributions of SkillDifference and
// AverageDifference over matches and of Difference over all their pairs.
type Summary struct {
	Matches           int
	SkillDifference   Distribution
	AverageDifference Distribution
	PairDifference    Distribution
}

// Summarize computes the Summary of matches (zero Distributions when there are
// none). The median of an even count is the mean of the two middle values.
func Summarize(matches []Match) Summary {
	s := Summary{Matches: len(matches)}
	if len(matches) == 0 {
		return s
	}
	n := 0
	for _, m := range matches {
		n += len(m.Pairs)
	}
	buf := make([]float64, max(n, len(matches)))
	xs := buf[:len(matches)]
	for i, m := range matches {
		xs[i] = m.SkillDifference
	}
	s.SkillDifference = distribution(xs)
	for i, m := range matches {
		xs[i] = m.AverageDifference
	}
	s.AverageDifference = distribution(xs)
	xs = buf[:0]
	for _, m := range matches {
		for _, p := range m.Pairs {
			xs = append(xs, p.Difference)
		}
	}
	s.PairDifference = distribution(xs)
	return s
}

// distribution sorts xs in place and summarises it.
func distribution(xs []float64) Distribution {
	if len(xs) == 0 {
		return Distribution{}
	}
	slices.Sort(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	if math.IsInf(sum, 0) { // only near MaxMagnitude with a huge queue
		mean = 0
		for _, x := range xs {
			mean += x / float64(len(xs))
		}
	}
	n := len(xs)
	median := xs[n/2]
	if n%2 == 0 {
		median = xs[n/2-1]/2 + xs[n/2]/2
	}
	return Distribution{Mean: mean, Median: median, Max: xs[n-1]}
}
