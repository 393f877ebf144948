package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// RoleDist declares the roles a scenario's queue offers (a queue definition's roles) and
// how each player picks the roles he lists: one of Picks, by weight, drawn once for the
// player, who keeps it in every ticket he makes (a tank stays a tank from match to match).
// The draws come from a stream of their own, one per player in population order, so the
// other draws (arrivals, parties, ratings, attributes) are the same with or without roles.
//
// A configuration's Composition makes its queue a role queue: its tickets carry their
// players' roles and each team's players play roles within the composition. A party whose
// roles fit no team is refused by the service (400); here its players pick again for that
// ticket, each from Picks (their own lists stay for their next tickets), up to
// maxRolePicks times, as the players of a refused party would agree on roles and queue
// again; a party that still fits no team is refused (Result.RolesRefused).
type RoleDist struct {
	Names []string   `json:"names"`
	Picks []RolePick `json:"picks"`
}

// RolePick is one way a player lists roles: Roles in order of preference (empty: any role,
// as a ticket's player without roles), Weight relative to the other picks.
type RolePick struct {
	Roles  []string `json:"roles"`
	Weight float64  `json:"weight"`
}

// RoleRange bounds how many players of a team play one role, as a queue definition's
// composition gives it ({"min": 1, "max": 1}; package rulesjson).
type RoleRange = rulesjson.RoleRange

// maxRolePicks is how many times the players of a party whose roles fit no team pick again
// for the ticket (the benchmark's role queue re-draws as often).
const maxRolePicks = 20

func (d *RoleDist) validate() error {
	if len(d.Names) == 0 || len(d.Names) > matchrules.MaxRoles {
		return fmt.Errorf("roles.names must list 1 to %d roles, got %d", matchrules.MaxRoles, len(d.Names))
	}
	for i, r := range d.Names {
		if err := ratings.ValidateName(r); err != nil {
			return fmt.Errorf("roles.names[%d]: %w", i, err)
		}
		if slices.Contains(d.Names[:i], r) {
			return fmt.Errorf("roles.names[%d]: %q is listed twice", i, r)
		}
	}
	if len(d.Picks) == 0 {
		return errors.New("roles.picks must list at least one pick")
	}
	positive := false
	for i, p := range d.Picks {
		at := "roles.picks[" + strconv.Itoa(i) + "]"
		if !(p.Weight >= 0 && p.Weight <= 1e9) {
			return fmt.Errorf("%s.weight must be a weight between 0 and 1e9, got %g", at, p.Weight)
		}
		positive = positive || p.Weight > 0
		for j, r := range p.Roles {
			switch {
			case !slices.Contains(d.Names, r):
				return fmt.Errorf("%s.roles[%d]: %q is not one of roles.names %v", at, j, r, d.Names)
			case slices.Contains(p.Roles[:j], r):
				return fmt.Errorf("%s.roles[%d]: %q is listed twice", at, j, r)
			}
		}
	}
	if !positive {
		return errors.New("roles.picks must give at least one pick a positive weight")
	}
	return nil
}

// draw returns the roles of one pick, drawn by weight; the list is shared, not copied.
func (d *RoleDist) draw(rng *rand.Rand) []string {
	return d.Picks[drawIndex(rng, len(d.Picks), func(i int) float64 { return d.Picks[i].Weight })].Roles
}

// drawPlayers gives every player of a population of n his roles; nil without a RoleDist.
func (d *RoleDist) drawPlayers(n int, rng *rand.Rand) [][]string {
	if d == nil {
		return nil
	}
	out := make([][]string, n)
	for i := range out {
		out[i] = d.draw(rng)
	}
	return out
}

// shape is the configuration's team shape as the pass takes it: two teams of the team
// size, each with the composition; nil without one (two plain teams, roles unread).
func (c Configuration) shape(teamSize int) []matchrules.TeamDef {
	if len(c.Composition) == 0 {
		return nil
	}
	comp := rulesjson.Composition(c.Composition)
	return []matchrules.TeamDef{{Size: teamSize, Composition: comp}, {Size: teamSize, Composition: comp}}
}

// queueRoles are the roles the configuration's queue lists: the scenario's, with a
// composition; none without (the queue then declares no roles and its tickets carry none).
func (c Configuration) queueRoles(sc *Scenario) []string {
	if len(c.Composition) == 0 || sc.Roles == nil {
		return nil
	}
	return sc.Roles.Names
}

// validateComposition checks the configuration's composition as a queue checks its
// definition's, naming the definition's field (composition.tank), once for both teams.
func (c Configuration) validateComposition(sc *Scenario) error {
	if len(c.Composition) == 0 {
		return nil
	}
	if sc.Roles == nil {
		return errors.New("composition needs the scenario's roles (roles.names, and roles.picks for how players pick them)")
	}
	if !c.queueMatcher() {
		return fmt.Errorf("composition runs on the tick matcher only, or a function's (matcher %q knows no roles)", c.Matcher)
	}
	cfg := matchrules.Config{TeamSize: sc.TeamSize, Strategy: string(c.strategy()), Shape: c.shape(sc.TeamSize),
		Roles: sc.Roles.Names, Interval: []matchrules.Step{{}}}
	var faults []string
	for _, fe := range fieldErrors(cfg.ValidateShape()) {
		field := fe[0]
		if strings.HasPrefix(field, "teams[") {
			// Both teams are the configuration's one composition: its fields.
			_, field, _ = strings.Cut(field, "].")
		}
		if msg := field + " " + fe[1]; !slices.Contains(faults, msg) {
			faults = append(faults, msg)
		}
	}
	if len(faults) > 0 {
		return errors.New(strings.Join(faults, "; "))
	}
	return nil
}

// fieldErrors lists the field faults of an apperr.Invalid error, as {field, message}.
func fieldErrors(err error) [][2]string {
	var e *apperr.Error
	if !errors.As(err, &e) {
		if err != nil {
			return [][2]string{{"composition", err.Error()}}
		}
		return nil
	}
	out := make([][2]string, len(e.Fields))
	for i, f := range e.Fields {
		out[i] = [2]string{f.Field, f.Message}
	}
	return out
}
