package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The queue's limits on a definition, which bound a scenario: a queue the simulator plays
// is one the queue accepts.
const (
	maxSteps      = queue.MaxExpansionStep // steps of expansions.interval
	maxTicketTTLS = int(queue.MaxTicketTTL / time.Second)
	maxAttributes = queue.MaxAttributes // attributes a scenario declares
)

// QueuePass is a Matcher on the queue's own pass, matchmaker/tick.Run, as the queue service
// runs it every tick_ms: each waiting Ticket becomes a tick ticket (its players' ratings,
// waiting since its creation, expiring TTL later), the pass runs at the simulated time with
// the queue's expansion steps, and its matches come back as population indices, each team
// in the order of the pass's pairs, its expiries as indices into waiting.
//
// So the simulator plays what a queue with this definition would do: each ticket's interval
// grows by its own wait through the steps, the oldest ticket anchors, tickets accept each
// other mutually (a party by its mean rating), a party plays whole on one team, and the
// teams are the most even split of the chosen tickets.
//
// Times are seconds on the simulated clock (at most MaxDays, about 3e7 s: float64 keeps
// them to a few nanoseconds). A QueuePass keeps its ticket buffer between ticks: one queue
// uses it at a time.
//
// With rules (NewRuledQueuePass), each ticket carries its Attributes to the pass, and the
// pass's Result.Waiting, the rule that held each anchor it could not match, is counted per
// rule (WaitingOn). With a role composition (PassRules.Shape), each ticket carries its
// players' Roles, the pass runs the shaped search (tick's runShaped), and each Match
// carries the role the pass gave each player.
type QueuePass struct {
	cfg     matchrules.Config
	ttl     time.Duration
	in      []matchpool.Ticket
	waiting map[string]int
}

// NewQueuePass checks the queue's rules as a queue definition's are checked (queue.PassConfig):
// team size, strategy (matchrules.RatingWindow or matchrules.GreedyPairs) and the interval's
// steps (at most maxSteps, the first at 0, after_s increasing, values never decreasing).
// ttl 0: tickets never expire.
func NewQueuePass(teamSize int, strategy string, interval []Step, ttl time.Duration) (*QueuePass, error) {
	return NewRuledQueuePass(teamSize, strategy, interval, ttl, PassRules{})
}

// PassRules are a queue's rules beside its interval, as the pass takes them: the
// attributes it declares, its match rules, and a team shape with role compositions
// (two teams of the team size; nil: two plain teams) over the roles it lists.
type PassRules struct {
	Attributes map[string]matchrules.Attribute
	Rules      []matchrules.Rule
	Shape      []matchrules.TeamDef
	Roles      []string
}

// NewRuledQueuePass is NewQueuePass for a queue that declares attributes, has rules or a
// role composition, checked as the queue checks its definition (a rule reading an
// undeclared attribute is refused by its field, rules[i].attribute), and run with the
// configuration the queue's own pass gets from that definition.
func NewRuledQueuePass(teamSize int, strategy string, interval []Step, ttl time.Duration, r PassRules) (*QueuePass, error) {
	if len(r.Shape) > 0 && len(r.Shape) != 2 {
		return nil, fmt.Errorf("teams: the simulator plays two teams, not %d", len(r.Shape))
	}
	for _, d := range r.Shape {
		if d.Size != teamSize {
			return nil, fmt.Errorf("teams: the simulator plays two teams of team_size (%d), not %d", teamSize, d.Size)
		}
	}
	q := queue.Queue{Teams: 2, TeamSize: teamSize, TeamDefs: r.Shape, Roles: r.Roles, Strategy: queue.Strategy(strategy),
		Attributes: r.Attributes, Rules: r.Rules}
	for _, s := range interval {
		q.Expansions.Interval = append(q.Expansions.Interval, queue.Step{AfterS: s.AfterS, Value: s.Value})
	}
	cfg, err := queue.PassConfig(q)
	if err != nil {
		return nil, err
	}
	return &QueuePass{cfg: cfg, ttl: ttl, waiting: map[string]int{}}, nil
}

// WaitingOn counts, over every pass so far, the anchors each rule held: per pass, each
// ticket that anchored a search and was left waiting, by the rule the pass says stopped it
// ("interval", or a rule's name; see matchpool.Wait).
func (m *QueuePass) WaitingOn() map[string]int { return m.waiting }

// Tick implements Matcher.
func (m *QueuePass) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	in := m.in[:0]
	for _, t := range waiting {
		expires := math.Inf(1)
		if m.ttl > 0 {
			expires = (t.Created + m.ttl).Seconds()
		}
		// The pass leaves its input untouched, so the ticket's ratings and attributes are
		// lent, not copied.
		in = append(in, matchpool.Ticket{Ratings: t.Ratings, WaitingSince: t.Created.Seconds(), ExpiresAt: expires,
			Attributes: t.Attributes, Roles: t.Roles, Players: t.IDs, Avoid: t.Avoid})
	}
	m.in = in
	res, err := tick.Run(in, now.Seconds(), m.cfg)
	clear(in) // drop the lent ratings
	if err != nil {
		// NewQueuePass checked the config; ratings and times are finite: a bug.
		panic(fmt.Sprintf("sim: tick.Run: %v", err))
	}
	matches := make([]Match, len(res.Matches))
	for i, mt := range res.Matches {
		if len(mt.Shaped) > 0 {
			matches[i] = shapedMatch(waiting, mt.Shaped)
			continue
		}
		for side, slots := range mt.Teams {
			team := make([]int, len(slots))
			for k, s := range slots {
				team[k] = waiting[s.Ticket].Players[s.Player]
			}
			matches[i].Teams[side] = team
		}
	}
	for _, w := range res.Waiting {
		m.waiting[w.Rule]++
	}
	var expired []int
	for _, e := range res.Expired {
		expired = append(expired, e.Ticket)
	}
	return matches, expired
}

// shapedMatch is a match of the shaped pass (two teams) as a Match: each team sorted by the
// ratings the queue saw, ascending, so that Teams[0][k] and Teams[1][k] are opponents of
// the same rank, as the two-team pass pairs them, each player's role beside him.
func shapedMatch(waiting []Ticket, teams []matchpool.Team) Match {
	var m Match
	for side, t := range teams[:2] {
		order := make([]int, len(t.Players))
		for k := range order {
			order[k] = k
		}
		rating := func(k int) float64 { s := t.Players[k]; return waiting[s.Ticket].Ratings[s.Player] }
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rating(a), rating(b)) })
		m.Teams[side] = make([]int, len(order))
		if t.Roles != nil {
			m.Roles[side] = make([]string, len(order))
		}
		for k, o := range order {
			s := t.Players[o]
			m.Teams[side][k] = waiting[s.Ticket].Players[s.Player]
			if t.Roles != nil {
				m.Roles[side][k] = t.Roles[o]
			}
		}
	}
	return m
}
