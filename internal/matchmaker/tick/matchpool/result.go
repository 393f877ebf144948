package matchpool

import (
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
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
	// Shaped holds a shaped queue's teams (matchrules.Config.Shape), in the shape's order; Teams and
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
	Value matchrules.Value
}

// Attribute returns the match's value of the attribute name, ok false without one.
func (m Match) Attribute(name string) (matchrules.Value, bool) {
	for _, a := range m.Attributes {
		if a.Name == name {
			return a.Value, true
		}
	}
	return matchrules.Value{}, false
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

// Team is one team of a shaped match.
type Team struct {
	Name    string
	Players []Slot
	// Roles are the players' roles, by Players' index; nil when the queue declares none.
	Roles []string
	// OpenSlots is how many players the team lacks of its Size: a match may start short once
	// its anchor waited past a step of MinSize.
	OpenSlots int
	Total     float64 // the players' ratings summed
}
