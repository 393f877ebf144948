// Package avoid reads a pass's avoid lists (matchpool.Ticket.Avoid) into the pairs of
// tickets that may not meet, for the passes to ask of two tickets. A pass builds it only
// when some ticket avoids someone: without avoid lists a pass reads nothing more.
package avoid

import (
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Pairs are the tickets of a pass, by input index, of which one binds an avoid list naming
// a player of the other.
type Pairs struct {
	// Team: such tickets may meet, on two teams (matchrules.AvoidTeam).
	Team bool
	with map[int32][]int32
}

// Read returns the pairs among the live tickets (input indices) whose lists bind at now
// (matchrules.Avoid.BindsAt), or nil when there are none.
func Read(tickets []matchpool.Ticket, live []int32, now float64, cfg *matchrules.Config) *Pairs {
	avoided := map[string][]int32{} // an id some binding list names: the tickets that name it
	for _, i := range live {
		t := &tickets[i]
		if len(t.Avoid) == 0 || !cfg.Avoid.BindsAt(max(now-t.WaitingSince, 0)) {
			continue
		}
		for _, ids := range t.Avoid {
			for _, id := range ids {
				avoided[id] = append(avoided[id], i)
			}
		}
	}
	if len(avoided) == 0 {
		return nil
	}
	p := &Pairs{Team: cfg.Avoid.Team(), with: map[int32][]int32{}}
	for _, j := range live {
		for _, id := range tickets[j].Players {
			for _, i := range avoided[id] {
				if i != j {
					p.add(i, j)
					p.add(j, i)
				}
			}
		}
	}
	if len(p.with) == 0 {
		return nil
	}
	return p
}

func (p *Pairs) add(i, j int32) {
	if !slices.Contains(p.with[i], j) {
		p.with[i] = append(p.with[i], j)
	}
}

// Apart: tickets i and j (input indices) may not meet (in one match, or with Team on one
// team).
func (p *Pairs) Apart(i, j int32) bool { return slices.Contains(p.with[i], j) }

// Any: ticket i may not meet some ticket.
func (p *Pairs) Any(i int32) bool { return len(p.with[i]) > 0 }

// Holds: no two of the tickets in, with team(k) the team of in[k], break the pairs.
func (p *Pairs) Holds(in []int32, team func(k int) int) bool {
	for a, i := range in {
		if !p.Any(i) {
			continue
		}
		for b := a + 1; b < len(in); b++ {
			if p.Apart(i, in[b]) && (!p.Team || team(a) == team(b)) {
				return false
			}
		}
	}
	return true
}
