package handlers

import (
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// This file holds what the JSON of team shapes needs beside package rulesjson (which maps a
// queue's named teams, minimum sizes and role compositions): the roles of a shaped match's
// teams.

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
