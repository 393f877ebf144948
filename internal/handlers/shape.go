package handlers

import (
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// This file holds the JSON of team shapes: a queue's named teams, minimum sizes and role
// compositions, and the teams of a shaped match.

type roleRangeJSON struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

type teamDefJSON struct {
	Name        string                   `json:"name,omitempty"`
	Size        int                      `json:"size"`
	MinSize     []stepJSON               `json:"min_size,omitempty"`
	Composition map[string]roleRangeJSON `json:"composition,omitempty"`
}

func composition(in map[string]roleRangeJSON) map[string]tick.RoleRange {
	if in == nil {
		return nil
	}
	out := make(map[string]tick.RoleRange, len(in))
	for role, r := range in {
		out[role] = tick.RoleRange{Min: r.Min, Max: r.Max}
	}
	return out
}

func compositionJSON(in map[string]tick.RoleRange) map[string]roleRangeJSON {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]roleRangeJSON, len(in))
	for role, r := range in {
		out[role] = roleRangeJSON{Min: r.Min, Max: r.Max}
	}
	return out
}

func teamDefs(in []teamDefJSON) []tick.TeamDef {
	if in == nil {
		return nil
	}
	out := make([]tick.TeamDef, len(in))
	for i, d := range in {
		out[i] = tick.TeamDef{Name: d.Name, Size: d.Size, Composition: composition(d.Composition)}
		for _, s := range d.MinSize {
			out[i].MinSize = append(out[i].MinSize, tick.Step{AfterS: s.AfterS, Value: s.Value})
		}
	}
	return out
}

func teamDefsJSON(in []tick.TeamDef) []teamDefJSON {
	if len(in) == 0 {
		return nil
	}
	out := make([]teamDefJSON, len(in))
	for i, d := range in {
		out[i] = teamDefJSON{Name: d.Name, Size: d.Size, Composition: compositionJSON(d.Composition)}
		for _, s := range d.MinSize {
			out[i].MinSize = append(out[i].MinSize, stepJSON{AfterS: s.AfterS, Value: s.Value})
		}
	}
	return out
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// teamRoles is a shaped team's roles as the API gives them: player id -> role.
func teamRoles(t queue.MatchTeam) map[string]string {
	if len(t.Roles) == 0 {
		return nil
	}
	out := make(map[string]string, len(t.Roles))
	for j, r := range t.Roles {
		if r != "" {
			out[t.Players[j].ID] = r
		}
	}
	return out
}
