package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
)

// Pairing is a Matcher on the /v1/matchmake algorithm (pairing.Make): the thesis's
// algorithm over the queue, beside the queue's own pass (QueuePass). Every waiting ticket's
// players become solo queue entries in arrival order (so a party may be split), and the
// interval widens with each player's wait (Expansion.At: a Widening without the 32-step
// limit of a queue definition):
//
//   - one MakeMatches call per tick, its interval limited to the widest any waiting player
//     has earned (the oldest ticket's);
//   - then a match is kept only if each of its pairs is within the interval of the pair's
//     older player (the anchor, who widens until it finds a partner, as in the thesis);
//     the players of a dropped match wait for the next tick.
//
// With a thesis Widening (EverySeconds 0) the interval has no limit and every pass drains
// the queue, as the thesis's does.
//
// A Pairing keeps buffers between ticks: one queue uses it at a time.
type Pairing struct {
	TeamSize  int
	Strategy  pairing.Strategy
	Expansion Expansion
	TTL       time.Duration // a ticket waiting this long expires; 0: never

	ratings, limit []float64 // per queue entry
	player, ticket []int
	matched, hit   []bool
}

// NewPairing checks the options MakeMatches will get.
func NewPairing(teamSize int, strategy pairing.Strategy, e Expansion, ttl time.Duration) (*Pairing, error) {
	o := pairing.DefaultOptions()
	o.TeamSize, o.Strategy = teamSize, strategy
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Pairing{TeamSize: teamSize, Strategy: strategy, Expansion: e, TTL: ttl}, nil
}

// Tick implements Matcher.
func (m *Pairing) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	ratings, limit, player, ticket := m.ratings[:0], m.limit[:0], m.player[:0], m.ticket[:0]
	for ti, t := range waiting {
		l := m.Expansion.At(now - t.Created)
		for i, p := range t.Players {
			ratings = append(ratings, t.Ratings[i])
			limit = append(limit, l)
			player = append(player, p)
			ticket = append(ticket, ti)
		}
	}
	m.ratings, m.limit, m.player, m.ticket = ratings, limit, player, ticket
	m.matched = slices.Grow(m.matched[:0], len(ratings))[:len(ratings)]
	clear(m.matched)
	matched := m.matched
	if len(ratings) < 2*m.TeamSize {
		return nil, m.expired(waiting, now, matched, ticket)
	}
	// The oldest player has the widest interval. With a finite limit, Initial = Max makes
	// MakeMatches accept exactly the differences up to it.
	iv := pairing.Interval{Initial: limit[0], Step: 1, Max: limit[0]}
	if math.IsInf(limit[0], 1) {
		w := m.Expansion.Widening
		iv = pairing.Interval{Initial: w.Initial, Step: w.Step, Max: math.Inf(1)}
	}
	res, err := pairing.Make(ratings, pairing.Options{TeamSize: m.TeamSize, Interval: iv, Strategy: m.Strategy})
	if err != nil { // options checked by NewPairing, ratings finite: a bug
		panic(fmt.Sprintf("sim: MakeMatches: %v", err))
	}
	var matches []Match
next:
	for _, mm := range res.Matches {
		for _, pr := range mm.Pairs {
			a, b := pr.Players[0], pr.Players[1]
			if pr.Difference > max(limit[a], limit[b]) {
				continue next
			}
		}
		var out Match
		for _, pr := range mm.Pairs {
			for side, q := range pr.Players {
				out.Teams[side] = append(out.Teams[side], player[q])
				matched[q] = true
			}
		}
		matches = append(matches, out)
	}
	return matches, m.expired(waiting, now, matched, ticket)
}

// expired lists the tickets past their time to live none of whose players was matched.
func (m *Pairing) expired(waiting []Ticket, now time.Duration, matched []bool, ticket []int) []int {
	if m.TTL <= 0 {
		return nil
	}
	m.hit = slices.Grow(m.hit[:0], len(waiting))[:len(waiting)]
	clear(m.hit)
	hit := m.hit
	for q, ok := range matched {
		if ok {
			hit[ticket[q]] = true
		}
	}
	var out []int
	for i, t := range waiting {
		if !hit[i] && expires(t, now, m.TTL) {
			out = append(out, i)
		}
	}
	return out
}
