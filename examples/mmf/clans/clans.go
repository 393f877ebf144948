// Package clans is examples/mmf's match function: friends of one clan are never on opposite
// teams. A queue's built-in rules cannot say that (a rule compares tickets, not which team
// each one ends on), so the queue hands its pool to this function at each tick.
package clans

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/matchmakerhq/matchmaker/client"
)

// Attribute is the ticket attribute that names a ticket's clan; a ticket without it (or with
// "") is in none.
const Attribute = "clan"

// Match proposes the tick's matches. From the oldest ticket on, each match gathers the
// tickets within the oldest one's rating interval, the nearest in rating first, placing each
// as it comes (a clan's tickets on the team its first one joined) until the teams are full;
// then it splits them again as evenly as it can, each clan's tickets together. A match whose
// teams cannot be filled is not proposed: its tickets wait for the next tick, with more
// tickets and wider intervals.
func Match(_ context.Context, req *client.MatchFunctionRequest) ([]client.ProposedMatch, error) {
	sizes := teamSizes(req)
	used := make([]bool, len(req.Pool))
	near := newByRating(req.Pool)
	var out []client.ProposedMatch
	for anchor := range req.Pool {
		if used[anchor] {
			continue
		}
		if m, members := fill(req.Pool, sizes, used, anchor, near); m != nil {
			out = append(out, *m)
			for _, i := range members {
				used[i] = true
			}
		}
	}
	return out, nil
}

// team is one team of a match being filled.
type team struct {
	tickets []string
	players int
	rating  float64
}

// fill tries to fill one match around pool[anchor] from the tickets not used yet; it returns
// the match and its tickets' indexes, or nil when the teams cannot be filled.
func fill(pool []client.MatchFunctionTicket, sizes []int, used []bool, anchor int, near *byRating) (*client.ProposedMatch, []int) {
	teams := make([]team, len(sizes))
	clanTeam := map[string]int{} // the team a clan of this match plays on
	var members []int
	center, interval := near.mean[anchor], pool[anchor].Tolerances.Interval
	next := near.outward(anchor) // the anchor, then the others nearest in rating first
	for i := next(); i >= 0 && math.Abs(near.mean[i]-center) <= interval; i = next() {
		if used[i] || i < anchor { // an older ticket left was the anchor of a match not filled
			continue
		}
		t := &pool[i]
		k := place(teams, sizes, clanTeam, t)
		if k < 0 {
			continue
		}
		teams[k].tickets = append(teams[k].tickets, t.Id)
		teams[k].players += len(t.Players)
		for _, p := range t.Players {
			teams[k].rating += p.Rating
		}
		if c := clanOf(t); c != "" {
			clanTeam[c] = k
		}
		members = append(members, i)
		if full(teams, sizes) {
			if even := evenSplit(pool, members, sizes); even != nil {
				teams = even
			}
			m := &client.ProposedMatch{}
			for _, tm := range teams {
				m.Teams = append(m.Teams, client.ProposedTeam{Tickets: tm.tickets})
			}
			return m, members
		}
	}
	return nil, nil
}

// place says which team ticket t joins, or -1: its clan's team when its clan already plays
// in the match (and -1 when that team has no room for it), else the team with room whose
// rating total is lowest.
func place(teams []team, sizes []int, clanTeam map[string]int, t *client.MatchFunctionTicket) int {
	fits := func(k int) bool { return teams[k].players+len(t.Players) <= sizes[k] }
	if k, ok := clanTeam[clanOf(t)]; ok {
		if fits(k) {
			return k
		}
		return -1
	}
	best := -1
	for k := range teams {
		if fits(k) && (best < 0 || teams[k].rating < teams[best].rating) {
			best = k
		}
	}
	return best
}

// evenSplit splits the match's tickets again: each clan's tickets as one group, every other
// ticket a group of its own; the largest groups first (the higher rated first among equal
// sizes), each on the team with room whose rating total is lowest; then two groups of the
// same size swap teams while that narrows the gap between their teams' totals. nil when the
// groups do not fit so: the first split stands.
func evenSplit(pool []client.MatchFunctionTicket, members []int, sizes []int) []team {
	var groups []team
	byClan := map[string]int{}
	for _, i := range members {
		t := &pool[i]
		g, ok := byClan[clanOf(t)]
		if !ok {
			g = len(groups)
			groups = append(groups, team{})
			if c := clanOf(t); c != "" {
				byClan[c] = g
			}
		}
		groups[g].tickets = append(groups[g].tickets, t.Id)
		groups[g].players += len(t.Players)
		for _, p := range t.Players {
			groups[g].rating += p.Rating
		}
	}
	slices.SortStableFunc(groups, func(a, b team) int {
		return cmp.Or(cmp.Compare(b.players, a.players), cmp.Compare(b.rating, a.rating))
	})
	teams := make([]team, len(sizes))
	teamOf := make([]int, len(groups))
	for g := range groups {
		best := -1
		for k := range teams {
			if teams[k].players+groups[g].players <= sizes[k] && (best < 0 || teams[k].rating < teams[best].rating) {
				best = k
			}
		}
		if best < 0 {
			return nil
		}
		teamOf[g] = best
		teams[best].players += groups[g].players
		teams[best].rating += groups[g].rating
	}
	for swapped := true; swapped; { // each swap lowers the sum of the totals' squares: it ends
		swapped = false
		for x := range groups {
			for y := range groups {
				a, b := teamOf[x], teamOf[y]
				d := groups[x].rating - groups[y].rating
				if a != b && groups[x].players == groups[y].players &&
					math.Abs(teams[a].rating-d-teams[b].rating-d) < math.Abs(teams[a].rating-teams[b].rating)-1e-9 {
					teamOf[x], teamOf[y] = b, a
					teams[a].rating -= d
					teams[b].rating += d
					swapped = true
				}
			}
		}
	}
	for g := range groups {
		teams[teamOf[g]].tickets = append(teams[teamOf[g]].tickets, groups[g].tickets...)
	}
	return teams
}

func full(teams []team, sizes []int) bool {
	for k := range teams {
		if teams[k].players < sizes[k] {
			return false
		}
	}
	return true
}

// teamSizes are the players of each of the queue's teams: its team_defs' sizes, or teams of
// team_size.
func teamSizes(req *client.MatchFunctionRequest) []int {
	var sizes []int
	if req.TeamDefs != nil && len(*req.TeamDefs) > 0 {
		for _, d := range *req.TeamDefs {
			sizes = append(sizes, int(d.Size))
		}
		return sizes
	}
	for range req.Teams {
		sizes = append(sizes, int(req.TeamSize))
	}
	return sizes
}

func clanOf(t *client.MatchFunctionTicket) string {
	if t.Attributes == nil {
		return ""
	}
	v, ok := (*t.Attributes)[Attribute]
	if !ok {
		return ""
	}
	clan, err := v.AsAttributeString()
	if err != nil {
		return ""
	}
	return clan
}

// byRating is the pool in the order of its tickets' mean ratings.
type byRating struct {
	order []int     // the pool's indexes, by mean rating
	at    []int     // each ticket's place in order
	mean  []float64 // each ticket's mean rating
}

func newByRating(pool []client.MatchFunctionTicket) *byRating {
	r := &byRating{order: make([]int, len(pool)), at: make([]int, len(pool)), mean: make([]float64, len(pool))}
	for i, t := range pool {
		for _, p := range t.Players {
			r.mean[i] += p.Rating / float64(len(t.Players))
		}
		r.order[i] = i
	}
	slices.SortStableFunc(r.order, func(a, b int) int { return cmp.Compare(r.mean[a], r.mean[b]) })
	for k, i := range r.order {
		r.at[i] = k
	}
	return r
}

// outward returns the pool's tickets one by one from anchor on, each next the nearest in
// rating to the anchor of those not returned yet; -1 after the last.
func (r *byRating) outward(anchor int) func() int {
	lo, hi, c := r.at[anchor], r.at[anchor]+1, r.mean[anchor]
	return func() int {
		switch {
		case lo < 0 && hi >= len(r.order):
			return -1
		case lo < 0 || hi < len(r.order) && r.mean[r.order[hi]]-c < c-r.mean[r.order[lo]]:
			hi++
			return r.order[hi-1]
		}
		lo--
		return r.order[lo+1]
	}
}
