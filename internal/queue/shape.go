package queue

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Team shapes (DESIGN, "Team shapes"): a queue's matches are Teams x TeamSize, or the named
// teams of TeamDefs, each with its minimum size by wait and its role composition. The pass
// (matchrules.Config.Shape) makes them; this file turns a queue's definition into that shape and
// checks it, naming the fields of PUT /v1/queues/{name}'s body.

// Shaped says whether the queue's matches need the shaped pass: more than two teams, named
// teams, minimum sizes, compositions or roles.
func (q *Queue) Shaped() bool {
	return q.Teams != 2 || len(q.TeamDefs) > 0 || len(q.MinTeamSize) > 0 || len(q.Composition) > 0 || len(q.Roles) > 0
}

// shape is the pass's team shape of the queue, nil for two plain teams.
func (q *Queue) shape() []matchrules.TeamDef {
	if !q.Shaped() {
		return nil
	}
	if len(q.TeamDefs) > 0 {
		return q.TeamDefs
	}
	out := make([]matchrules.TeamDef, max(q.Teams, 0))
	for i := range out {
		out[i] = matchrules.TeamDef{Size: q.TeamSize, MinSize: TickSteps(q.MinTeamSize), Composition: q.Composition}
	}
	return out
}

// largestTeamDef is the largest of the named teams' sizes, 0 without named teams: a
// definition with team_defs has that team_size, and len(team_defs) teams.
func (q *Queue) largestTeamDef() int {
	n := 0
	for _, d := range q.TeamDefs {
		n = max(n, d.Size)
	}
	return n
}

// TeamDefsShape is the teams and team_size a definition with named teams has.
func TeamDefsShape(defs []matchrules.TeamDef) (teams, teamSize int) {
	return len(defs), (&Queue{TeamDefs: defs}).largestTeamDef()
}

// addShapeFaults checks the team shape with the pass's rules, renamed to the request's
// fields: team_defs[i].size, min_team_size[j].value, composition.tank, roles[i].
func (q *Queue) addShapeFaults(f *apperr.Fields) {
	if q.Teams < 2 || q.Teams > matchrules.MaxTeams {
		f.Add("teams", "must be 2..%d", matchrules.MaxTeams)
		return
	}
	if len(q.TeamDefs) > 0 && len(q.TeamDefs) != q.Teams {
		f.Add("teams", "must be left out, or be the number of team_defs (%d)", len(q.TeamDefs))
		return
	}
	if largest := q.largestTeamDef(); largest > 0 && q.TeamSize != largest {
		f.Add("team_size", "must be left out, or be the largest of team_defs' sizes (%d)", largest)
	}
	if len(q.TeamDefs) > 0 && (len(q.MinTeamSize) > 0 || len(q.Composition) > 0) {
		f.Add("team_defs", "replace min_team_size and composition: give each team its own")
	}
	for i, r := range q.Roles {
		if err := ratings.ValidateName(r); err != nil {
			f.Add("roles["+strconv.Itoa(i)+"]", "%s", err)
		}
	}
	for i, d := range q.TeamDefs {
		if err := ratings.ValidateName(d.Name); d.Name != "" && err != nil {
			f.Add("team_defs["+strconv.Itoa(i)+"].name", "%s", err)
		}
		if len(d.MinSize) > MaxExpansionStep {
			f.Add("team_defs["+strconv.Itoa(i)+"].min_size", "must have at most %d steps", MaxExpansionStep)
		}
	}
	if len(q.MinTeamSize) > MaxExpansionStep {
		f.Add("min_team_size", "must have at most %d steps", MaxExpansionStep)
	}
	cfg := matchrules.Config{TeamSize: q.TeamSize, Strategy: string(q.Strategy), Shape: q.shape(), Roles: q.Roles,
		Interval: []matchrules.Step{{}}}
	named := len(q.TeamDefs) > 0
	var e *apperr.Error
	if !errors.As(cfg.ValidateShape(), &e) {
		return
	}
	seen := map[string]bool{}
	for _, x := range e.Fields {
		field := x.Field
		switch {
		case named:
			field = strings.Replace(field, "teams[", "team_defs[", 1)
		case strings.HasPrefix(field, "teams[") && strings.Contains(field, "]."):
			// every team of a symmetric shape is the queue's one definition: its fields
			_, rest, _ := strings.Cut(field, "].")
			field = strings.Replace(rest, "min_size", "min_team_size", 1)
			if field == "size" {
				field = "team_size"
			}
		}
		if !seen[field+x.Message] {
			seen[field+x.Message] = true
			f.Add(field, "%s", x.Message)
		}
	}
}

// addRoleFaults checks a new ticket's players' roles against the queue's
// (players[i].roles[j]), and that the party's roles fit one team's composition (players).
func (nt *NewTicket) addRoleFaults(f *apperr.Fields, q Queue) {
	if len(nt.Players) > 1 && len(q.Roles) > 0 && q.Shaped() && f.Len() == 0 {
		roles := make([][]string, len(nt.Players))
		for i, p := range nt.Players {
			roles[i] = p.Roles
		}
		if !q.tickConfig().PartyFits(roles) {
			defer f.Add("players", "cannot all play on one team: no team's composition takes this party's roles")
		}
	}
	for i, p := range nt.Players {
		if len(p.Roles) > len(q.Roles) && len(q.Roles) > 0 {
			f.Add("players["+strconv.Itoa(i)+"].roles", "must list at most the queue's %d roles", len(q.Roles))
			continue
		}
		for j, r := range p.Roles {
			field := "players[" + strconv.Itoa(i) + "].roles[" + strconv.Itoa(j) + "]"
			switch {
			case len(q.Roles) == 0:
				f.Add("players["+strconv.Itoa(i)+"].roles", "must be left out: the queue declares no roles")
			case !slices.Contains(q.Roles, r):
				f.Add(field, "must be one of the queue's roles %v", q.Roles)
			case slices.Contains(p.Roles[:j], r):
				f.Add(field, "must not repeat a role: %q is listed before", r)
			}
			if len(q.Roles) == 0 {
				break
			}
		}
	}
}

// shapedMatch is a shaped pass's match as the store keeps it: each team with its name, its
// players' roles and its open slots.
func shapedMatch(waiting []Ticket, index []int, m matchpool.Match, match *Match) {
	match.Teams = make([]MatchTeam, len(m.Shaped))
	for k, team := range m.Shaped {
		mt := &match.Teams[k]
		mt.Name, mt.OpenSlots = team.Name, team.OpenSlots
		for j, s := range team.Players {
			t := waiting[index[s.Ticket]]
			p := t.Players[s.Player]
			mt.Players = append(mt.Players, MatchPlayer{ID: p.ID, TicketID: t.ID, Rating: p.Rating, LowPriority: p.LowPriority})
			mt.RatingTotal += p.Rating
			if team.Roles != nil {
				mt.Roles = append(mt.Roles, team.Roles[j])
			}
		}
	}
}
