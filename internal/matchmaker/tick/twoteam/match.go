package twoteam

import (
	"math"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// makeMatch records the match of the tickets at positions c (the anchor first): the most
// even split, the pairs, the region; and takes the tickets out of the pass. It first checks
// the rules judged on the match (distance, team_balance, party_mix) and the default bound
// on its balance (balanceHolds), and a match that breaks one is not made: it reports
// whether the match was made.
func (p *pass) makeMatch(c []int32) bool { return p.makeMatchSplit(c, p.splitOf(c)) }

// splitOf is the most even split of the tickets at positions c (the anchor first): bit i
// set for c[i] on the anchor's team.
func (p *pass) splitOf(c []int32) uint32 {
	sp := &p.splitter
	sp.sizes, sp.totals = sp.sizes[:0], sp.totals[:0]
	for _, pos := range c {
		sp.sizes = append(sp.sizes, int(p.nodes[pos].size))
		sp.totals = append(sp.totals, p.nodes[pos].total)
	}
	return sp.split(p.teamSize)
}

// makeMatchSplit is makeMatch with the split of c, team0 (splitOf's), found already.
func (p *pass) makeMatchSplit(c []int32, team0 uint32) bool {
	if p.avoid != nil {
		var ok bool
		if team0, ok = p.keepApart(c, team0); !ok {
			p.picks++
			return false
		}
	}
	t := p.teamSize
	m := made{ticketsAt: int32(len(p.matchTickets)), slotsAt: int32(len(p.matchSlots)), pairsAt: int32(len(p.matchPairs)),
		ticketCount: int32(len(c)), region: -1}
	for _, pos := range c {
		p.matchTickets = append(p.matchTickets, int(p.nodes[pos].input))
	}
	// Each team's players sorted by rating (then ticket, then player: a fixed order).
	var team [2][]member
	for side := range 2 {
		ms := p.members[side][:0]
		for i, pos := range c {
			if team0>>i&1 != uint32(1-side) {
				continue
			}
			n := &p.nodes[pos]
			for j := range int32(n.size) {
				r := n.total // a solo's rating; a party's are copied by position
				if n.size > 1 {
					r = p.ratings[n.ratingsAt+j]
				}
				x := member{matchpool.Slot{Ticket: int(n.input), Player: int(j)}, r, n.interval}
				ms = append(ms, x)
				for q := len(ms) - 1; q > 0 && x.less(ms[q-1]); q-- { // at most 16 players
					ms[q], ms[q-1] = ms[q-1], x
				}
			}
		}
		team[side], p.members[side] = ms, ms
	}
	for side := range 2 {
		for _, x := range team[side] {
			p.matchSlots = append(p.matchSlots, x.slot)
		}
	}
	var tot0, tot1 float64
	for i := range t {
		x, y := team[0][i], team[1][i]
		tot0 += x.rating
		tot1 += y.rating
		p.matchPairs = append(p.matchPairs, matchpool.Pair{Players: [2]matchpool.Slot{x.slot, y.slot}, Difference: math.Abs(x.rating - y.rating),
			Interval: min(x.interval, y.interval)})
	}
	m.skillDifference = math.Abs(tot0 - tot1)
	p.picks++
	p.lastOverBound = false
	avgDiff := m.skillDifference / float64(t)
	if p.judgesMatch && !p.matchRulesHold(c, team0, avgDiff) || !p.balanceHolds(c, avgDiff) {
		p.matchTickets, p.matchSlots, p.matchPairs = p.matchTickets[:m.ticketsAt], p.matchSlots[:m.slotsAt], p.matchPairs[:m.pairsAt]
		return false
	}
	if r, _ := p.region(c, math.MaxUint64); r >= 0 {
		m.region = int8(r)
	}
	if p.hasRules {
		m.attrSpan = p.matchAttributes(c)
	}
	p.made = append(p.made, m)
	for _, pos := range c {
		p.take(pos)
	}
	return true
}

// made is a match made, its parts in the pass's arrays until result copies them out.
type made struct {
	ticketsAt, slotsAt, pairsAt int32 // where its tickets, players and pairs start
	ticketCount                 int32
	region                      int8 // -1: none
	skillDifference             float64
	attrSpan                    [2]int32 // its attributes are p.attrs[attrs[0]:attrs[1]]
}

// result copies the matches out of the pass's arrays (which it keeps for the next pass)
// into arrays of their own, as large as they need: a tick of a large queue usually makes
// few matches.
func (p *pass) result() []matchpool.Match {
	t := int32(p.teamSize)
	ids, slots, pairs := slices.Clone(p.matchTickets), slices.Clone(p.matchSlots), slices.Clone(p.matchPairs)
	attrs, lists := slices.Clone(p.matchAttrs), slices.Clone(p.matchLists)
	for i, x := range p.matchAttrs { // their lists share one array too (p.matchLists grew meanwhile)
		if n := len(x.Value.List); n > 0 {
			attrs[i].Value.List = scratch.Span(lists, p.matchListAt[i], int32(n))
		}
	}
	out := make([]matchpool.Match, len(p.made))
	for i, m := range p.made {
		x := matchpool.Match{
			Tickets:           scratch.Span(ids, m.ticketsAt, m.ticketCount),
			Teams:             [2][]matchpool.Slot{scratch.Span(slots, m.slotsAt, t), scratch.Span(slots, m.slotsAt+t, t)},
			Pairs:             scratch.Span(pairs, m.pairsAt, t),
			SkillDifference:   m.skillDifference,
			AverageDifference: m.skillDifference / float64(t),
		}
		if m.attrSpan[1] > m.attrSpan[0] {
			x.Attributes = scratch.Span(attrs, m.attrSpan[0], m.attrSpan[1]-m.attrSpan[0])
		}
		if m.region >= 0 {
			x.Region = p.regionNames[m.region]
		}
		out[i] = x
	}
	return out
}

// member is a player of a match being made, with its rating and its ticket's interval.
type member struct {
	slot     matchpool.Slot
	rating   float64
	interval float64
}

func (a member) less(b member) bool {
	if a.rating != b.rating {
		return a.rating < b.rating
	}
	if a.slot.Ticket != b.slot.Ticket {
		return a.slot.Ticket < b.slot.Ticket
	}
	return a.slot.Player < b.slot.Player
}

// take removes the ticket at pos from the pass: matched.
func (p *pass) take(pos int32) {
	p.nodes[pos].state = matched
	p.taken[p.nodes[pos].rank] = true
	pv, nx := p.nodes[pos].prev, p.nodes[pos].next
	if pv >= 0 {
		p.nodes[pv].next = nx
	}
	if nx >= 0 {
		p.nodes[nx].prev = pv
	}
	if p.partitionRule >= 0 {
		pv, nx := p.partPrev[pos], p.partNext[pos]
		if pv >= 0 {
			p.partNext[pv] = nx
		}
		if nx >= 0 {
			p.partPrev[nx] = pv
		}
	}
	s := int(p.nodes[pos].size)
	p.unmatchedBySize[s]--
	if p.unmatchedBySize[s] <= 2*p.teamSize/s {
		p.feasibleBySize = [matchrules.MaxTeamSize + 1]int8{}
	}
	if p.greedy {
		p.oldest.set(int(pos), none)
	}
}
