package sim

import (
	"math/rand/v2"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Ticket is what waits in the queue: one player, or a party that should play on one team.
type Ticket struct {
	ID      int           // increasing in arrival order
	Players []int         // indices into the population
	Ratings []float64     // the rating the queue sees for each player, fixed when the ticket was made
	Created time.Duration // simulated time of arrival
	// Attributes are the ticket's values of the scenario's attributes (nil without any).
	Attributes map[string]matchrules.Value
	// Roles are the roles each player lists, by Players' index, on a queue with a role
	// composition (nil on any other: the queue reads no roles).
	Roles [][]string
	// IDs are the players' ids and Avoid the ids each avoids, by Players' index, when the
	// scenario gives avoid lists (AvoidDist); nil otherwise.
	IDs   []string
	Avoid [][]string
}

// Match is a match a Matcher made. Teams[0][k] and Teams[1][k] are the k-th pair of
// opponents (the player-to-player pairing of the thesis); both teams have the scenario's
// team size.
type Match struct {
	Teams [2][]int // indices into the population
	// Roles are the role each player plays, by Teams' index, on a queue with a role
	// composition; nil on any other.
	Roles [2][]string
}

// Matcher is one pass of a queue: given the tickets waiting at simulated time now, oldest
// first, it returns the matches to start and the tickets that expire (as indices into
// waiting). It is called once a tick while tickets wait; the simulator removes the matched
// players and the expired tickets before the next call, and checks that no player is matched
// twice or both matched and expired. A ticket whose players are only partly matched keeps
// its other players (the pairing adapter can split parties; the simulator counts it).
//
// QueuePass is the queue's own pass (matchmaker/tick) behind this interface; Pairing the
// /v1/matchmake pairing over the queue; Random no matchmaking.
type Matcher interface {
	Tick(waiting []Ticket, now time.Duration) (matches []Match, expired []int)
}

// Random is no matchmaking (Table 8.3's first column): whoever has waited longest is put in
// the next match, 2 x TeamSize players at a time in queue order, shuffled into two teams.
type Random struct {
	TeamSize int
	TTL      time.Duration // a ticket waiting this long expires; 0: never
	Rng      *rand.Rand
}

// Tick implements Matcher.
func (m *Random) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	var queue []int
	for _, t := range waiting {
		queue = append(queue, t.Players...)
	}
	var matches []Match
	n := 2 * m.TeamSize
	for len(queue) >= n {
		group := queue[:n:n]
		queue = queue[n:]
		m.Rng.Shuffle(n, func(i, j int) { group[i], group[j] = group[j], group[i] })
		matches = append(matches, Match{Teams: [2][]int{group[:m.TeamSize], group[m.TeamSize:]}})
	}
	// The players left are the youngest; a ticket among them expires if it is old enough.
	left := len(queue)
	var expired []int
	for i := len(waiting) - 1; i >= 0 && left > 0; i-- {
		t := waiting[i]
		left -= len(t.Players)
		if left >= 0 && expires(t, now, m.TTL) {
			expired = append(expired, i)
		}
	}
	return matches, expired
}

// expires reports whether the ticket has waited its time to live.
func expires(t Ticket, now, ttl time.Duration) bool {
	return ttl > 0 && now-t.Created >= ttl
}
