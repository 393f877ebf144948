package tick

import (
	"math"
	"strconv"

	"matchmaker/internal/apperr"
	"matchmaker/internal/matchmaker/pairing"
)

// The strategies, named as pairing's.
const (
	RatingWindow = string(pairing.RatingWindow) // the default
	GreedyPairs  = string(pairing.GreedyPairs)
)

// Limits.
const (
	MaxTeamSize  = pairing.MaxTeamSize
	MaxMagnitude = pairing.MaxMagnitude // bound of ratings, times, intervals and latencies
	// MaxRegions bounds the distinct region names in one pass: a ticket's usable regions
	// are a bit set of one word. The queue service admits only its queue's regions.
	MaxRegions = 64
)

// The reasons of an Expiry.
const (
	// ReasonTTL: the ticket's ExpiresAt has come.
	ReasonTTL = "ttl"
	// ReasonNoRegion: latency is considered and every region the ticket measured is beyond
	// its widest limit (the last max_latency step): no wait would make it playable, so it
	// leaves at once rather than at its TTL.
	ReasonNoRegion = "no_region"
)

// Ticket is one waiting ticket: a player, or a party that plays on one team.
type Ticket struct {
	Ratings      []float64 // one per player, 1..TeamSize of them
	WaitingSince float64   // seconds, on the caller's clock
	ExpiresAt    float64   // seconds, same clock; +Inf never expires
	// Latencies to the regions the player or party measured, sorted by Region without
	// repeats. Empty means no data: the ticket accepts any region.
	Latencies []RegionLatency
	// Backfill is reserved for the next issue: a running match that lost players asks for
	// joiners. Such tickets will be served before the oldest ordinary ticket (a loop of
	// their own ahead of the anchor loop), their joiners placed by the late-joiner rule
	// (teams.Assign), and two of them never matched with each other. Until then Run rejects
	// a ticket that sets it.
	Backfill *Backfill
}

// Backfill describes a running match's request for players; see Ticket.Backfill.
type Backfill struct {
	Teams     [2][]float64 // ratings of the players still in the match, per team
	OpenSlots [2]int       // players wanted per team
}

// RegionLatency is a ticket's measured round trip to one region.
type RegionLatency struct {
	Region string
	MS     float64
}

// Step is one step of an expansion: from AfterS seconds of waiting on, the value is Value.
type Step struct {
	AfterS, Value float64
}

// Config is a queue's matching rules.
type Config struct {
	TeamSize int    // players per team, 1..MaxTeamSize; a match is 2 x TeamSize players
	Strategy string // RatingWindow (also when empty) or GreedyPairs
	// Interval is the rating interval by wait: a ticket accepts another whose rating differs
	// from its own by at most its current value. The first step is at 0, AfterS increase
	// and values never decrease (tolerances widen).
	Interval []Step
	// MaxLatency is the latency (ms) a ticket accepts by wait, with the same rules; empty
	// means latency is not considered.
	MaxLatency []Step
}

// Slot is one player: the input index of its ticket and its index in the ticket's Ratings.
type Slot struct {
	Ticket, Player int
}

// Pair is two opponents of near-equal rating, Players[0] on team 0 and Players[1] on team 1.
type Pair struct {
	Players    [2]Slot
	Difference float64 // |rating difference|
	// Interval is the narrower of the two tickets' current intervals. Tickets accept each
	// other through the anchor, by their mean ratings, and players are paired after the
	// split, so Difference may exceed it.
	Interval float64
}

// Match is 2 x TeamSize players of whole tickets.
type Match struct {
	// Tickets are the input indices of its tickets: the anchor first, then the others in the
	// order they were chosen.
	Tickets []int
	// Teams are each team's players, in the order of Pairs (Teams[0][i] and Teams[1][i] are
	// Pairs[i]). Team 0 is the anchor's.
	Teams [2][]Slot
	// Pairs: each team's players sorted by rating and paired in that order, so every player
	// faces the opponent of the same rank on the other team; ascending.
	Pairs []Pair
	// Region is where the match is played: "" when latency is not considered or none of its
	// tickets has latency data.
	Region            string
	SkillDifference   float64 // |difference of the team totals|
	AverageDifference float64 // |difference of the team averages| = SkillDifference / TeamSize
}

// Expiry is a ticket that leaves the pass unmatched, and why.
type Expiry struct {
	Ticket int    // input index
	Reason string // ReasonTTL or ReasonNoRegion
}

// Result is what a pass decided. A ticket in neither list keeps waiting.
type Result struct {
	Matches []Match  // in the order they were made, which is their anchors' age order
	Expired []Expiry // by input index
}

// Validate reports every invalid field of the config as one apperr.Invalid error naming
// team_size, strategy, interval, interval[i].after_s, interval[i].value and the same of
// max_latency.
func (c Config) Validate() error {
	var f apperr.Fields
	c.addFaults(&f)
	return f.Err()
}

func (c Config) addFaults(f *apperr.Fields) {
	if c.TeamSize < 1 || c.TeamSize > MaxTeamSize {
		f.Add("team_size", "must be between 1 and %d", MaxTeamSize)
	}
	switch c.Strategy {
	case "", RatingWindow, GreedyPairs:
	default:
		f.Add("strategy", "must be %q or %q", RatingWindow, GreedyPairs)
	}
	if len(c.Interval) == 0 {
		f.Add("interval", "must have at least one step, the first at after_s 0")
	}
	addStepFaults(f, "interval", c.Interval)
	addStepFaults(f, "max_latency", c.MaxLatency)
}

func addStepFaults(f *apperr.Fields, name string, steps []Step) {
	for i, s := range steps {
		// The field's name is built only for a fault: a valid schedule is checked at every
		// pass, and building its names took a tenth of the simulator's time.
		at := func() string { return name + "[" + strconv.Itoa(i) + "]" }
		switch {
		case i == 0 && s.AfterS != 0:
			f.Add(at()+".after_s", "must be 0: the first step holds from the start")
		case i > 0 && !(s.AfterS > steps[i-1].AfterS && s.AfterS <= MaxMagnitude):
			f.Add(at()+".after_s", "must be greater than the previous step's and at most %g", MaxMagnitude)
		}
		switch {
		case !(s.Value >= 0 && s.Value <= MaxMagnitude): // false for NaN too
			f.Add(at()+".value", "must be a finite number between 0 and %g", MaxMagnitude)
		case i > 0 && s.Value < steps[i-1].Value:
			f.Add(at()+".value", "must be at least the previous step's (%g): tolerances widen", steps[i-1].Value)
		}
	}
}

// Validate reports every invalid field of a ticket for a queue of teams of teamSize as one
// apperr.Invalid error naming ratings, ratings[i], waiting_since, expires_at,
// latencies[i].region, latencies[i].ms or backfill, so that the queue service can refuse a
// ticket by the rules Run applies.
func (t Ticket) Validate(teamSize int) error {
	var f apperr.Fields
	t.addFaults(&f, -1, teamSize)
	return f.Err()
}

// addFaults names the fields as they are in a ticket, or with ticket >= 0 as Run's
// tickets[ticket].field (built only for a fault: a pass checks 100,000 tickets).
func (t Ticket) addFaults(f *apperr.Fields, ticket, teamSize int) {
	at := func(field string) string {
		if ticket < 0 {
			return field
		}
		return "tickets[" + strconv.Itoa(ticket) + "]." + field
	}
	if len(t.Ratings) == 0 || len(t.Ratings) > teamSize {
		f.Add(at("ratings"), "must hold 1 to team_size (%d) players", teamSize)
	}
	for i, r := range t.Ratings {
		if !(math.Abs(r) <= MaxMagnitude) {
			f.Add(at("ratings["+strconv.Itoa(i)+"]"), "must be a finite number between %g and %g",
				-MaxMagnitude, MaxMagnitude)
		}
	}
	if !(math.Abs(t.WaitingSince) <= MaxMagnitude) {
		f.Add(at("waiting_since"), "must be a finite number between %g and %g", -MaxMagnitude, MaxMagnitude)
	}
	if math.IsNaN(t.ExpiresAt) {
		f.Add(at("expires_at"), "must be a number (+Inf: never)")
	}
	for i, l := range t.Latencies {
		switch {
		case l.Region == "":
			f.Add(at(latencyField(i, "region")), "must not be empty")
		case i > 0 && l.Region <= t.Latencies[i-1].Region:
			f.Add(at(latencyField(i, "region")), "must come after %q: latencies are sorted by region, each once",
				t.Latencies[i-1].Region)
		}
		if !(l.MS >= 0 && l.MS <= MaxMagnitude) {
			f.Add(at(latencyField(i, "ms")), "must be a finite number between 0 and %g", MaxMagnitude)
		}
	}
	if t.Backfill != nil {
		f.Add(at("backfill"), "is not supported yet")
	}
}

func latencyField(i int, field string) string {
	return "latencies[" + strconv.Itoa(i) + "]." + field
}

// current is the value of the last step whose AfterS <= wait. A negative wait (a ticket
// stamped by a clock ahead of the caller's) counts as 0.
func current(steps []Step, wait float64) float64 {
	v := steps[0].Value
	for _, s := range steps[1:] {
		if s.AfterS > wait {
			break
		}
		v = s.Value
	}
	return v
}
