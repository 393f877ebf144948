// Package check judges a ticket against a queue's rules, as a pass does before it reads the
// ticket: its own fields (matchpool.Ticket.AddFaults), its attributes against the declarations
// and the rules that read them, its players' roles against the queue's roles and the
// shape's compositions. Faults name the fields as matchpool.TicketField does. tick.ValidateTicket
// and tick.ValidateAttributes are the checks for a service; Checker is a pass's, for many
// tickets.
package check

import (
	"slices"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Ticket adds the faults of ticket t (the pass's tickets[index], or with index < 0 a ticket
// alone) to f: its own fields, its attributes (with k, a pass's checker, or without one as
// Attributes does) and its roles.
func Ticket(f *apperr.Fields, c *matchrules.Config, t *matchpool.Ticket, index int, k *Checker) {
	t.AddFaults(f, index, min(max(c.LargestTeam(), 1), matchrules.MaxTeamSize))
	if k != nil {
		k.RoleLists = k.RoleLists[:0]
		k.addFaults(f, t, index)
	} else {
		Attributes(f, c, t, index)
	}
	if len(t.Roles) == 0 && t.Backfill == nil {
		return
	}
	at := func(field string) string { return matchpool.TicketField(index, field) }
	Roles(f, c, t, at, k)
	if c.Shaped() && t.Backfill != nil {
		f.Add(at("backfill"), "is for two-team queues: a queue with a team shape takes no backfill tickets")
	}
}

// Attributes adds the faults of ticket t's attributes (the pass's tickets[index], or with
// index < 0 a ticket alone) against c's declarations: each declared, of its type, a list
// within max_items, and every attribute a rule reads given unless it has a default.
func Attributes(f *apperr.Fields, c *matchrules.Config, t *matchpool.Ticket, index int) {
	if len(t.Attributes) == 0 && len(c.Rules) == 0 {
		return
	}
	at := func(field string) string { return matchpool.TicketField(index, field) }
	for name, v := range t.Attributes {
		a, ok := c.Attributes[name]
		if !ok {
			f.Add(at("attributes."+name), "is not an attribute the queue declares")
			continue
		}
		matchrules.AddValueFaults(f, func() string { return at("attributes." + name) }, v, a)
	}
	if t.Backfill != nil {
		return // a backfill ticket is the running match's: the rules judge its joiners
	}
	for _, r := range c.Rules {
		if !r.ReadsAttribute() {
			continue
		}
		if _, ok := t.Attributes[r.Attribute]; !ok {
			if a, ok := c.Attributes[r.Attribute]; ok && a.Default == nil {
				f.Add(at("attributes."+r.Attribute), "is required: rule %q reads it and it has no default", r.Name)
			}
		}
	}
}

// Roles adds the faults of ticket t's roles (at names its fields): one list per player at
// most, each a queue role, none twice, and a party that some team's composition takes; k,
// when not nil, keeps its answers for the pass.
func Roles(f *apperr.Fields, c *matchrules.Config, t *matchpool.Ticket, at func(string) string, k *Checker) {
	if len(t.Roles) == 0 {
		return
	}
	if len(t.Roles) > len(t.Ratings) {
		f.Add(at("roles"), "must give at most one list per player (%d)", len(t.Ratings))
	}
	// The lists as indices: a pass reads them from k (RoleLists) rather than look the names
	// up again, and the names are checked one by one only when some list is not valid.
	valid := true
	lists := k.listsBuf(len(t.Roles))
	for i, rs := range t.Roles {
		var ok bool
		lists[i], ok = c.RoleListOf(rs)
		valid = valid && ok
	}
	if c.Shaped() && len(t.Roles) > 1 && len(c.Roles) > 0 && !k.partyFits(c, lists) {
		f.Add(at("roles"), "cannot all be played on one team: no team's composition takes this party's roles")
	}
	if valid {
		return
	}
	addRoleNameFaults(f, c, t.Roles, at)
}

// addRoleNameFaults names each role of the lists that is not the queue's, or repeated.
func addRoleNameFaults(f *apperr.Fields, c *matchrules.Config, lists [][]string, at func(string) string) {
	for i, rs := range lists {
		for j, r := range rs {
			field := func() string { return at("roles[" + strconv.Itoa(i) + "][" + strconv.Itoa(j) + "]") }
			switch {
			case !slices.Contains(c.Roles, r):
				f.Add(field(), "must be one of the queue's roles %v", c.Roles)
			case slices.Contains(rs[:j], r):
				f.Add(field(), "must not repeat a role: %q is listed before", r)
			}
		}
	}
}
