package tick

import (
	"math"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
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
	// Backfill, when set, makes this a backfill ticket: a running match that lost players
	// asks for joiners. Ratings are then empty (the match's players are in Backfill.Teams)
	// and Latencies hold at most the match's region (any ms: the match is played there).
	// See Run for how backfill tickets are served.
	Backfill *Backfill
	// Attributes are the party's values of the queue's declared attributes
	// (Config.Attributes), one value for the whole ticket; an attribute it does not give
	// takes the declaration's default.
	Attributes map[string]Value
	// Roles are the roles each player plays, by Ratings' index, in order of preference;
	// a player without a list plays any (Config.Roles).
	Roles [][]string
}

// Backfill describes a running match's request for players; see Ticket.Backfill.
type Backfill struct {
	// Teams are the players still in the match (their ratings, all in [0,
	// teams.MaxWeight]) and its bots, per team.
	Teams [2]teams.Roster
	// OpenSlots are the players wanted per team; a team never gets more, and never more
	// than TeamSize players in all.
	OpenSlots [2]int
	// Bots is the server's bot rule: with it a joiner's team may lose a bot, or the other
	// gain one, as teams.Assign counts it. nil: the bots stay as they are.
	Bots *teams.BotRule
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
	// Attributes declares the attributes tickets carry, by name; Rules are the match rules
	// beside the interval and latency, in the order "why a ticket waits" tries them. A
	// config without rules matches as it did before rules existed.
	Attributes map[string]Attribute
	Rules      []Rule
	// Shape, when set, replaces the two teams of TeamSize: any number of teams, named, of
	// their own sizes, minimum sizes and role compositions (shaped.go). TeamSize is then the
	// largest team's size (a party may be no larger). Roles are the roles players may list
	// (Ticket.Roles), which a composition bounds.
	Shape []TeamDef
	Roles []string
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
	// Attributes are what the match's equal and intersect rules agreed on, in the rules'
	// order, one per attribute (the first rule's): for equal the one value of the tickets
	// the rule binds, for intersect the values common to their lists, sorted (when the rule
	// binds none of the tickets: of all of them; an equal rule whose tickets then differ
	// reports nothing). nil without such rules.
	Attributes []MatchAttribute
	// Shaped holds a shaped queue's teams (Config.Shape), in the shape's order; Teams and
	// Pairs are then empty, and SkillDifference and AverageDifference are the largest
	// difference of two teams' totals and averages.
	Shaped []Team
	// Exact: the shaped teams are the most even split of the match's tickets under the
	// shape; false where the candidates were too many to try every split and a heuristic
	// made them.
	Exact bool
}

// MatchAttribute is an attribute's value agreed in a match.
type MatchAttribute struct {
	Name  string
	Value Value
}

// Attribute returns the match's value of the attribute name, ok false without one.
func (m Match) Attribute(name string) (Value, bool) {
	for _, a := range m.Attributes {
		if a.Name == name {
			return a.Value, true
		}
	}
	return Value{}, false
}

// Expiry is a ticket that leaves the pass unmatched, and why.
type Expiry struct {
	Ticket int    // input index
	Reason string // ReasonTTL or ReasonNoRegion
}

// Fill is what a backfill ticket got: the tickets that join its running match, and where.
type Fill struct {
	Ticket  int      // the backfill ticket's input index
	Joiners []Joiner // in the order they were placed
	// Teams are the match's teams after the joins: its players, the joiners' ratings
	// appended, and its bots as the bot rule leaves them.
	Teams  [2]teams.Roster
	Region string // the match's region, as the backfill ticket gave it ("" for none)
}

// Joiner is a ticket that joins a running match, all its players on Team.
type Joiner struct {
	Ticket int // input index
	Team   int
}

// Result is what a pass decided. A ticket in none of the lists keeps waiting.
type Result struct {
	Fills   []Fill   // in the age order of their backfill tickets, made before any match
	Matches []Match  // in the order they were made, which is their anchors' age order
	Expired []Expiry // by input index
	// Waiting says, for each ticket that anchored a search and found no match, the rule
	// that stopped it, in the anchors' age order.
	Waiting []Wait
}

// Validate reports every invalid field of the config as one apperr.Invalid error naming
// team_size, strategy, interval, interval[i].after_s, interval[i].value and the same of
// max_latency, attributes.<name>.type|max_items|default, and rules[i].name|type|attribute|
// min_common|expansions[j].after_s|expansions[j].value|optional_after_s.
func (c Config) Validate() error {
	var f apperr.Fields
	c.addFaults(&f)
	return f.Err()
}

func (c Config) addFaults(f *apperr.Fields) {
	c.addRuleFaults(f)
	c.addShapeFaults(f)
	if !c.shaped() && (c.TeamSize < 1 || c.TeamSize > MaxTeamSize) {
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
func (t *Ticket) addFaults(f *apperr.Fields, ticket, teamSize int) {
	at := func(field string) string {
		if ticket < 0 {
			return field
		}
		return "tickets[" + strconv.Itoa(ticket) + "]." + field
	}
	if b := t.Backfill; b != nil {
		b.addFaults(f, at, teamSize)
		if len(t.Ratings) > 0 {
			f.Add(at("ratings"), "must be empty for a backfill ticket: its players are in backfill.teams")
		}
		if len(t.Latencies) > 1 {
			f.Add(at("latencies"), "must hold at most the match's region for a backfill ticket")
		}
	} else if len(t.Ratings) == 0 || len(t.Ratings) > teamSize {
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
}

func (b *Backfill) addFaults(f *apperr.Fields, at func(string) string, teamSize int) {
	open, players := 0, 0
	for i, r := range b.Teams {
		players += len(r.Players)
		team := func(field string) string { return at("backfill.teams[" + strconv.Itoa(i) + "]." + field) }
		for j, w := range r.Players {
			if !(w >= 0 && w <= teams.MaxWeight) {
				f.Add(team("players["+strconv.Itoa(j)+"]"), "must be a finite number between 0 and %g", float64(teams.MaxWeight))
			}
		}
		for j, w := range r.Bots {
			if !(w >= 0 && w <= teams.MaxWeight) {
				f.Add(team("bots["+strconv.Itoa(j)+"]"), "must be a finite number between 0 and %g", float64(teams.MaxWeight))
			}
		}
		n := b.OpenSlots[i]
		switch {
		case n < 0:
			f.Add(at("backfill.open_slots["+strconv.Itoa(i)+"]"), "must not be negative")
		case len(r.Players)+n > teamSize:
			f.Add(at("backfill.open_slots["+strconv.Itoa(i)+"]"), "must leave the team at most team_size (%d) players: it has %d",
				teamSize, len(r.Players))
		default:
			open += n
		}
	}
	if open == 0 && b.OpenSlots[0] >= 0 && b.OpenSlots[1] >= 0 {
		f.Add(at("backfill.open_slots"), "must ask for at least one player")
	}
	if players == 0 {
		f.Add(at("backfill.teams"), "must hold at least one player still in the match")
	}
	if b.Bots != nil {
		b.Bots.Check(f, at("backfill.bots"))
	}
}

func latencyField(i int, field string) string {
	return "latencies[" + strconv.Itoa(i) + "]." + field
}

// Current is a tolerance after wait seconds, as the pass applies it (see current).
func Current(steps []Step, wait float64) float64 { return current(steps, wait) }

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
