package twoteam

import (
	"math"
	"slices"
	"sort"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// serveBackfills serves the backfill tickets, oldest first, before any anchor: each takes
// the acceptable tickets nearest its match's rating that fit its open slots.
func (p *pass) serveBackfills() {
	for _, i := range p.backfills {
		if f, ok := p.backfill(int(i)); ok {
			p.fills = append(p.fills, f)
		}
	}
}

// backfill serves the backfill ticket of input index i. Its rating is the mean of the
// match's players; its interval grows with its wait as any ticket's. The waiting tickets
// are walked nearest that rating first (the older first on a tie), within the backfill's
// interval, and a ticket is taken when the two accept each other (the difference within
// the ticket's own interval too), it accepts the match's region at its current latency
// limit (a region the backfill does not name: any), every rating of it is a valid weight
// (0..teams.MaxWeight), and a team has open slots for all its players. The team is the one
// teams.Assign (the late-joiner rule of /v1/teams/assign) chooses among the teams with room,
// the party as one joiner of its total weight and head count, with the bots its join
// removes or adds by the backfill's bot rule. The walk ends when the slots are full or the
// interval is passed. A ticket must also keep the backfill's rules (backfill_rules.go), and
// not be one a joiner taken before may not meet (the avoid lists, either scope: the running
// match's players carry no lists the pass knows of). A backfill that found nobody keeps
// waiting.
func (p *pass) backfill(i int) (matchpool.Fill, bool) {
	t := &p.tickets[i]
	b := t.Backfill
	rosters, rating, ok := runningTeams(b)
	if !ok {
		return matchpool.Fill{}, false // validated away: a match with nobody left asks for nobody
	}
	interval := matchrules.Current(p.interval, p.now-t.WaitingSince)
	region := ""
	if len(t.Latencies) > 0 {
		region = t.Latencies[0].Region
	}
	accepts := p.regionRule(region)
	joinRules := p.backfillRules(t)
	o := p.outwardFrom(rating)
	room := b.OpenSlots
	var joiners []matchpool.Joiner
	var taken []int32
	closed := make([]bool, 2)
	for room[0]+room[1] > 0 {
		dl, dh := math.Inf(1), math.Inf(1)
		if o.left >= 0 {
			dl = matchrules.Distance(rating, p.nodes[o.left].rating)
		}
		if o.right >= 0 {
			dh = matchrules.Distance(rating, p.nodes[o.right].rating)
		}
		if dl > interval && dh > interval {
			break
		}
		c, d := o.step(p, dl, dh)
		cn := &p.nodes[c]
		size := int(cn.size)
		if d > cn.interval || !accepts(cn) || size > room[0] && size > room[1] || !p.weights(cn) || !joins(joinRules, c) ||
			p.avoid != nil && p.meetsAny(c, taken) {
			continue
		}
		closed[0], closed[1] = room[0] < size, room[1] < size
		res, err := teams.Assign(rosters[:], cn.total, teams.AssignOptions{Bots: b.Bots, Humans: size,
			MaxHumansPerTeam: p.teamSize, Closed: closed})
		if err != nil {
			continue // no team may take him (the bot rule's cap): the next may fit
		}
		p.seat(&rosters[res.Team], cn)
		applyBots(&rosters, res.BotChange, b.Bots)
		room[res.Team] -= size
		joiners = append(joiners, matchpool.Joiner{Ticket: int(cn.input), Team: res.Team})
		taken = append(taken, c)
	}
	if len(joiners) == 0 {
		return matchpool.Fill{}, false
	}
	// Taken after the walk, whose cursor reads the links of the positions it passed.
	for _, c := range taken {
		p.take(c)
	}
	return matchpool.Fill{Ticket: i, Joiners: joiners, Teams: rosters, Region: region}, true
}

// runningTeams is a copy of the backfill's teams, for the joins to change, and the mean
// rating of its players; ok false when it has none.
func runningTeams(b *matchpool.Backfill) (rosters [2]teams.Roster, rating float64, ok bool) {
	sum, n := 0.0, 0
	for k, r := range b.Teams {
		rosters[k] = teams.Roster{Players: slices.Clone(r.Players), Bots: slices.Clone(r.Bots)}
		for _, w := range r.Players {
			sum += w
			n++
		}
	}
	if n == 0 {
		return rosters, 0, false
	}
	return rosters, sum / float64(n), true
}

// outwardFrom is a cursor from the nearest unmatched positions on each side of rating.
func (p *pass) outwardFrom(rating float64) cursor {
	live := int32(len(p.nodes))
	at := int32(sort.Search(int(live), func(k int) bool { return p.nodes[k].rating >= rating }))
	h, l := at, at-1
	for h < live && p.nodes[h].state == matched {
		h++
	}
	for l >= 0 && p.nodes[l].state == matched {
		l--
	}
	if h == live {
		h = -1
	}
	o := cursor{right: h}
	o.enterLeft(p, l)
	return o
}

// seat appends the players of the ticket at n to a team's roster.
func (p *pass) seat(team *teams.Roster, n *node) {
	for j := range int32(n.size) {
		r := n.total // a solo's rating
		if n.size > 1 {
			r = p.ratings[n.ratingsAt+j]
		}
		team.Players = append(team.Players, r)
	}
}

// regionRule returns whether a waiting ticket accepts the backfill's region now: without
// latency considered, or a region not named, every ticket that accepts some region does;
// a region no waiting ticket measured is accepted by those without latency data only.
func (p *pass) regionRule(region string) func(*node) bool {
	if !p.latency || region == "" {
		return func(n *node) bool { return n.regions != 0 }
	}
	id, ok := slices.BinarySearch(p.regionNames, region)
	if !ok {
		return func(n *node) bool { return n.latencyCount == 0 }
	}
	return func(n *node) bool { return n.regions>>id&1 == 1 }
}

// weights reports whether every rating of the ticket at n is a weight teams.Assign takes.
func (p *pass) weights(n *node) bool {
	ok := func(w float64) bool { return w >= 0 && w <= teams.MaxWeight }
	if n.size == 1 {
		return ok(n.total)
	}
	for _, r := range p.ratings[n.ratingsAt : n.ratingsAt+int32(n.size)] {
		if !ok(r) {
			return false
		}
	}
	return true
}

// applyBots changes the rosters' bots as a join did (teams.AssignChoice.BotChange): a team
// that loses bots keeps the others at their mean (which bot leaves is not known, so
// teams.Assign values the loss at the mean), one that gains bots gains them at the rule's
// mean weight. The totals are then those teams.Assign reported.
func applyBots(rosters *[2]teams.Roster, change []int, rule *teams.BotRule) {
	for k, c := range change {
		bots := rosters[k].Bots
		switch {
		case c < 0:
			mean := 0.0
			for _, w := range bots {
				mean += w
			}
			mean /= float64(len(bots))
			bots = bots[:len(bots)+c]
			for j := range bots {
				bots[j] = mean
			}
		case c > 0:
			for range c {
				bots = append(bots, rule.MeanWeight)
			}
		}
		rosters[k].Bots = bots
	}
}
