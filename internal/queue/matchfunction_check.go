package queue

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The check of a match function's proposals: each proposed match on its own, against the
// pool the function was sent, the queue's shape and the tickets' state. It is a pure
// function of those (no store, no clock, no HTTP), so the leader, the simulator and the
// clients' tests check a function's matches alike.

// FunctionCheck is what a match function's proposals are checked against.
type FunctionCheck struct {
	Queue *Queue
	// Pool is the tickets the function was sent (it may match no other).
	Pool []Ticket
	// Searching says whether a ticket of the pool is still searching; nil: every one is.
	Searching func(id string) bool
	// Now is the time of the check: the tickets' waits (a team's minimum size, the pairs'
	// intervals) are taken at it.
	Now time.Time
	// Constraints are further rules every match keeps, whoever made it, checked last (after
	// the players' avoid lists, avoidBroken, and the low-priority pool, lowPriorityBroken),
	// on the match as it would be made.
	Constraints []MatchConstraint
}

// A MatchConstraint says why match m, of these tickets, breaks a rule every match keeps
// ("" when it keeps it), and a sentence naming who breaks it.
type MatchConstraint func(q *Queue, tickets []*Ticket, m *Match) (RejectReason, string)

// Check checks each proposal on its own, in the answer's order, and returns the matches to
// make (as the queue keeps matches: ids, teams with ratings and roles, pairs, quality,
// attributes, region) and the proposals rejected. A ticket is in one made match at most: a
// later proposal that names a ticket an earlier one made took is a RejectDuplicate. A
// proposal that passes every check is never rejected.
func (c *FunctionCheck) Check(proposals []ProposedMatch) (made []Match, rejected []Rejection) {
	index := make(map[string]int, len(c.Pool))
	for i := range c.Pool {
		index[c.Pool[i].ID] = i
	}
	taken := make(map[string]bool)
	specs := c.Queue.teamSpecs()
	for i := range proposals {
		p := &proposals[i]
		m, teams, why, detail := c.one(p, index, taken, specs)
		if why != "" {
			rejected = append(rejected, Rejection{Match: i, Reason: why, Detail: detail, Tickets: proposedTickets(p)})
			continue
		}
		for _, team := range teams {
			for _, t := range team {
				taken[t.ID] = true
			}
		}
		made = append(made, m)
	}
	return made, rejected
}

// one checks and builds proposal p: the match, its tickets by team, or why not.
func (c *FunctionCheck) one(p *ProposedMatch, index map[string]int, taken map[string]bool, specs []teamSpec) (Match, [][]*Ticket, RejectReason, string) {
	teams, why, detail := c.resolve(p, index, taken)
	if why != "" {
		return Match{}, nil, why, detail
	}
	if why, detail = c.sized(teams, specs); why != "" {
		return Match{}, nil, why, detail
	}
	roles, why, detail := c.roles(p, teams, specs)
	if why != "" {
		return Match{}, nil, why, detail
	}
	attrs, why, detail := c.attributes(p, teams)
	if why != "" {
		return Match{}, nil, why, detail
	}
	region, why, detail := c.region(p, teams)
	if why != "" {
		return Match{}, nil, why, detail
	}
	m := c.build(teams, specs, roles)
	m.Attributes, m.Region = attrs, region
	var all []*Ticket
	for _, team := range teams {
		all = append(all, team...)
	}
	if why, detail := avoidBroken(c.Queue, teams, c.Now); why != "" {
		return Match{}, nil, why, detail
	}
	if why, detail := lowPriorityBroken(c.Queue, all, c.Now); why != "" {
		return Match{}, nil, why, detail
	}
	for _, constraint := range c.Constraints {
		if why, detail := constraint(c.Queue, all, &m); why != "" {
			return Match{}, nil, why, detail
		}
	}
	return m, teams, "", ""
}

// resolve finds p's tickets in the pool, by team: each one the pool's, still searching, on
// one team once, and not taken by an earlier match.
func (c *FunctionCheck) resolve(p *ProposedMatch, index map[string]int, taken map[string]bool) ([][]*Ticket, RejectReason, string) {
	teams := make([][]*Ticket, len(p.Teams))
	teamOf := make(map[string]int)
	for k, ids := range p.Teams {
		for _, id := range ids {
			i, ok := index[id]
			switch {
			case !ok:
				return nil, RejectUnknown, fmt.Sprintf("ticket %q is not in the pool the function was sent", id)
			case c.Searching != nil && !c.Searching(id):
				return nil, RejectNotSearching, fmt.Sprintf("ticket %q is no longer searching", id)
			case taken[id]:
				return nil, RejectDuplicate, fmt.Sprintf("ticket %q is in an earlier match of the answer", id)
			}
			if was, seen := teamOf[id]; seen {
				if was == k {
					return nil, RejectDuplicate, fmt.Sprintf("ticket %q is listed twice on team %d", id, k)
				}
				return nil, RejectPartySplit, fmt.Sprintf("ticket %q is on teams %d and %d: a ticket's players play on one team", id, was, k)
			}
			teamOf[id] = k
			teams[k] = append(teams[k], &c.Pool[i])
		}
	}
	if len(teamOf) == 0 {
		return nil, RejectEmpty, "the match names no ticket"
	}
	return teams, "", ""
}

// teamSpec is one team of the queue's shape as the check reads it.
type teamSpec struct {
	name        string
	size        int
	minSize     []matchrules.Step // nil: size
	composition map[string]matchrules.RoleRange
}

// teamSpecs is the queue's teams: its named teams, or Teams of TeamSize.
func (q *Queue) teamSpecs() []teamSpec {
	if len(q.TeamDefs) > 0 {
		out := make([]teamSpec, len(q.TeamDefs))
		for i, d := range q.TeamDefs {
			out[i] = teamSpec{name: d.Name, size: d.Size, minSize: d.MinSize, composition: d.Composition}
		}
		return out
	}
	out := make([]teamSpec, max(q.Teams, 0))
	for i := range out {
		out[i] = teamSpec{size: q.TeamSize, composition: q.Composition}
		if len(q.MinTeamSize) > 0 {
			out[i].minSize = TickSteps(q.MinTeamSize)
		}
	}
	return out
}

// sized checks the team count and each team's players: at most its size, at least its
// minimum at the wait of the match's oldest ticket.
func (c *FunctionCheck) sized(teams [][]*Ticket, specs []teamSpec) (RejectReason, string) {
	if len(teams) != len(specs) {
		return RejectTeams, fmt.Sprintf("%d teams: the queue's matches have %d", len(teams), len(specs))
	}
	wait := c.oldestWait(teams)
	for k, team := range teams {
		n := 0
		for _, t := range team {
			n += len(t.Players)
		}
		lo := specs[k].size
		if specs[k].minSize != nil {
			lo = int(matchrules.Current(specs[k].minSize, wait))
		}
		if n > specs[k].size || n < lo {
			bound := fmt.Sprintf("%d", specs[k].size)
			if lo != specs[k].size {
				bound = fmt.Sprintf("%d..%d at the oldest ticket's wait", lo, specs[k].size)
			}
			return RejectTeamSize, fmt.Sprintf("team %d has %d players: it takes %s", k, n, bound)
		}
	}
	return "", ""
}

// oldestWait is the wait in seconds of the match's oldest ticket.
func (c *FunctionCheck) oldestWait(teams [][]*Ticket) float64 {
	wait := 0.0
	for _, team := range teams {
		for _, t := range team {
			wait = max(wait, c.Now.Sub(t.CreatedAt).Seconds())
		}
	}
	return wait
}

// roles gives every player of a queue with roles his role, by team and Players' order: the
// ones p gives (each a role of the queue's that the player listed, or any when he lists
// none), or else a fit of each team's composition; nil for a queue without roles.
func (c *FunctionCheck) roles(p *ProposedMatch, teams [][]*Ticket, specs []teamSpec) ([][]string, RejectReason, string) {
	q := c.Queue
	if len(q.Roles) == 0 {
		if len(p.Roles) > 0 {
			return nil, RejectRoles, "the match gives roles: the queue declares none"
		}
		return nil, "", ""
	}
	if len(p.Roles) > 0 {
		return c.givenRoles(p, teams, specs)
	}
	cfg := matchrules.Config{Roles: q.Roles}
	out := make([][]string, len(teams))
	for k, team := range teams {
		var lists []matchrules.RoleList
		for _, t := range team {
			for _, pl := range t.Players {
				l, _ := cfg.RoleListOf(pl.Roles)
				lists = append(lists, l)
			}
		}
		lo, hi := roleBounds(q.Roles, specs[k])
		got := make([]int8, len(lists))
		all, covered := matchrules.FitRoles(lists, lo, hi, got)
		need := 0
		for _, x := range lo {
			need += x
		}
		if !all || covered < need {
			return nil, RejectComposition, fmt.Sprintf("team %d's players' roles cannot meet its composition", k)
		}
		out[k] = make([]string, len(got))
		for j, r := range got {
			out[k][j] = q.Roles[r]
		}
	}
	return out, "", ""
}

// roleBounds are a team's least and most players of each of the queue's roles.
func roleBounds(roles []string, spec teamSpec) (lo, hi []int) {
	lo, hi = make([]int, len(roles)), make([]int, len(roles))
	for i, r := range roles {
		hi[i] = spec.size
		if b, ok := spec.composition[r]; ok {
			lo[i], hi[i] = b.Min, b.Max
		}
	}
	return lo, hi
}

// givenRoles checks the roles a proposal gives: one for each of its players and none for
// another, each the queue's and the player's, each team's counts within its composition.
func (c *FunctionCheck) givenRoles(p *ProposedMatch, teams [][]*Ticket, specs []teamSpec) ([][]string, RejectReason, string) {
	q := c.Queue
	out := make([][]string, len(teams))
	named := 0
	for k, team := range teams {
		count := map[string]int{}
		for _, t := range team {
			for _, pl := range t.Players {
				r, ok := p.Roles[pl.ID]
				switch {
				case !ok:
					return nil, RejectRoles, fmt.Sprintf("the match gives roles but none to player %q", pl.ID)
				case !slices.Contains(q.Roles, r):
					return nil, RejectRoles, fmt.Sprintf("player %q's role %q is not one of the queue's roles", pl.ID, r)
				case len(pl.Roles) > 0 && !slices.Contains(pl.Roles, r):
					return nil, RejectRoles, fmt.Sprintf("player %q does not play %q (he plays %s)", pl.ID, r, strings.Join(pl.Roles, ", "))
				}
				named++
				count[r]++
				out[k] = append(out[k], r)
			}
		}
		for r, b := range specs[k].composition {
			if count[r] < b.Min || count[r] > b.Max {
				return nil, RejectComposition, fmt.Sprintf("team %d has %d %s: its composition takes %d..%d", k, count[r], r, b.Min, b.Max)
			}
		}
	}
	if named != len(p.Roles) {
		return nil, RejectRoles, "the match gives roles to players not in it"
	}
	return out, "", ""
}

// attributes are the match's attribute values: what its tickets agree on by the queue's
// equal and intersect rules (as a pass's match reports them), then the values p gives, each
// an attribute the queue declares, of its type.
func (c *FunctionCheck) attributes(p *ProposedMatch, teams [][]*Ticket) ([]matchpool.MatchAttribute, RejectReason, string) {
	q := c.Queue
	out := agreedAttributes(q, teams)
	for _, name := range sortedKeys(p.Attributes) {
		v := p.Attributes[name]
		decl, ok := q.Attributes[name]
		if !ok {
			return nil, RejectAttributes, fmt.Sprintf("attribute %q is not one the queue declares", name)
		}
		var f apperr.Fields
		matchrules.AddValueFaults(&f, func() string { return name }, v, decl)
		var e *apperr.Error
		if errors.As(f.Err(), &e) {
			return nil, RejectAttributes, fmt.Sprintf("attribute %q %s", e.Fields[0].Field, e.Fields[0].Message)
		}
		if k := slices.IndexFunc(out, func(a matchpool.MatchAttribute) bool { return a.Name == name }); k >= 0 {
			out[k].Value = v
		} else {
			out = append(out, matchpool.MatchAttribute{Name: name, Value: v})
		}
	}
	return out, "", ""
}

// agreedAttributes are the values the tickets share for each equal and intersect rule of
// the queue (the first rule of each attribute): equal's one value, intersect's common values,
// sorted; a rule whose tickets share nothing reports nothing.
func agreedAttributes(q *Queue, teams [][]*Ticket) []matchpool.MatchAttribute {
	var out []matchpool.MatchAttribute
	for _, r := range q.Rules {
		if r.Kind != matchrules.RuleEqual && r.Kind != matchrules.RuleIntersect {
			continue
		}
		if slices.ContainsFunc(out, func(a matchpool.MatchAttribute) bool { return a.Name == r.Attribute }) {
			continue
		}
		if v, ok := agreed(q, r, teams); ok {
			out = append(out, matchpool.MatchAttribute{Name: r.Attribute, Value: v})
		}
	}
	return out
}

// agreed is what the tickets share of rule r's attribute, ok false when nothing.
func agreed(q *Queue, r matchrules.Rule, teams [][]*Ticket) (matchrules.Value, bool) {
	var common *matchrules.Value
	for _, team := range teams {
		for _, t := range team {
			v, ok := t.Attributes[r.Attribute]
			if !ok {
				d := q.Attributes[r.Attribute].Default
				if d == nil {
					return matchrules.Value{}, false
				}
				v = *d
			}
			switch {
			case common == nil:
				c := v
				c.List = slices.Clone(v.List)
				common = &c
			case r.Kind == matchrules.RuleEqual && (v.Type != common.Type || v.Str != common.Str || v.Num != common.Num):
				return matchrules.Value{}, false
			case r.Kind == matchrules.RuleIntersect:
				common.List = slices.DeleteFunc(common.List, func(s string) bool { return !slices.Contains(v.List, s) })
			}
		}
	}
	if common == nil || r.Kind == matchrules.RuleIntersect && len(common.List) == 0 {
		return matchrules.Value{}, false
	}
	slices.Sort(common.List)
	return *common, true
}

// region is where the match is played: the one p names (one of the queue's regions, when it
// lists them), or, in a queue that considers latency, the queue's region whose worst latency
// among the tickets is least (of those every ticket with latencies measured); "" otherwise.
func (c *FunctionCheck) region(p *ProposedMatch, teams [][]*Ticket) (string, RejectReason, string) {
	q := c.Queue
	if p.Region != "" {
		if len(q.Regions) > 0 && !slices.Contains(q.Regions, p.Region) || ratings.ValidateName(p.Region) != nil {
			return "", RejectRegion, fmt.Sprintf("region %q is not one of the queue's", p.Region)
		}
		return p.Region, "", ""
	}
	if len(q.Expansions.MaxLatencyMS) == 0 {
		return "", "", ""
	}
	best, bestMS := "", math.Inf(1)
	for _, region := range q.Regions {
		worst, usable := 0.0, true
		for _, team := range teams {
			for _, t := range team {
				if len(t.Latencies) == 0 {
					continue
				}
				ms, ok := t.Latencies[region]
				usable = usable && ok
				worst = max(worst, ms)
			}
		}
		if usable && worst < bestMS {
			best, bestMS = region, worst
		}
	}
	return best, "", ""
}

// build makes the match of checked teams: each team's players with their tickets, ratings
// and roles, its name and open slots; two plain teams each sorted by rating and paired in
// that order, as the built-in pass pairs them; the differences of the teams' totals and
// averages.
func (c *FunctionCheck) build(teams [][]*Ticket, specs []teamSpec, roles [][]string) Match {
	q := c.Queue
	m := Match{ID: NewID("mt-"), CreatedAt: c.Now, Teams: make([]MatchTeam, len(teams))}
	wait := make(map[string]float64) // each player's ticket's wait, for the pairs' intervals
	for k, team := range teams {
		mt := &m.Teams[k]
		mt.Name = specs[k].name
		for _, t := range team {
			for _, pl := range t.Players {
				mt.Players = append(mt.Players, MatchPlayer{ID: pl.ID, TicketID: t.ID, Rating: pl.Rating, LowPriority: pl.LowPriority})
				mt.RatingTotal += pl.Rating
				wait[pl.ID] = c.Now.Sub(t.CreatedAt).Seconds()
			}
		}
		if roles != nil {
			mt.Roles = roles[k]
		}
		mt.OpenSlots = specs[k].size - len(mt.Players)
	}
	if !q.Shaped() {
		c.pair(&m, wait)
	}
	for a := range m.Teams {
		for b := a + 1; b < len(m.Teams); b++ {
			ta, tb := &m.Teams[a], &m.Teams[b]
			m.SkillDifference = max(m.SkillDifference, math.Abs(ta.RatingTotal-tb.RatingTotal))
			m.AverageDifference = max(m.AverageDifference, math.Abs(average(ta)-average(tb)))
		}
	}
	return m
}

// pair sorts the two teams' players by rating and pairs them in that order, each pair with
// the wider of its players' tickets' current intervals.
func (c *FunctionCheck) pair(m *Match, wait map[string]float64) {
	interval := TickSteps(c.Queue.Expansions.Interval)
	for k := range m.Teams {
		slices.SortStableFunc(m.Teams[k].Players, func(a, b MatchPlayer) int { return cmp.Compare(a.Rating, b.Rating) })
	}
	a, b := m.Teams[0].Players, m.Teams[1].Players
	for i := range min(len(a), len(b)) {
		iv := 0.0
		if len(interval) > 0 {
			iv = max(matchrules.Current(interval, wait[a[i].ID]), matchrules.Current(interval, wait[b[i].ID]))
		}
		m.Pairs = append(m.Pairs, Pair{Players: [2]string{a[i].ID, b[i].ID}, Difference: math.Abs(a[i].Rating - b[i].Rating), Interval: iv})
	}
}

func average(t *MatchTeam) float64 {
	if len(t.Players) == 0 {
		return 0
	}
	return t.RatingTotal / float64(len(t.Players))
}

// proposedTickets are the ticket ids p names, in its order.
func proposedTickets(p *ProposedMatch) []string {
	var out []string
	for _, team := range p.Teams {
		out = append(out, team...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
