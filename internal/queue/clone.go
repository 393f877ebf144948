package queue

import (
	"maps"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Deep copies of the domain's values, for a store that hands out copies (the memory store's
// callers must not change what it keeps) and for what several callers share.

// Clone is a deep copy of q, for a store that hands out copies.
func (q Queue) Clone() Queue {
	q.Mutators = slices.Clone(q.Mutators)
	q.Regions = slices.Clone(q.Regions)
	q.Expansions.Interval = slices.Clone(q.Expansions.Interval)
	q.Expansions.MaxLatencyMS = slices.Clone(q.Expansions.MaxLatencyMS)
	q.Attributes = maps.Clone(q.Attributes)
	q.Rules = slices.Clone(q.Rules)
	cloneShape(&q)
	if q.Webhook != nil {
		w := *q.Webhook
		q.Webhook = &w
	}
	if q.Acceptance != nil {
		a := *q.Acceptance
		q.Acceptance = &a
	}
	if q.Allocator != nil {
		a := *q.Allocator
		q.Allocator = &a
	}
	if q.MatchFunction != nil {
		mf := *q.MatchFunction
		q.MatchFunction = &mf
	}
	return q
}

// Clone is a deep copy of t.
func (t Ticket) Clone() Ticket {
	t.Players = slices.Clone(t.Players)
	for i := range t.Players {
		t.Players[i].Roles = slices.Clone(t.Players[i].Roles)
		t.Players[i].Avoid = slices.Clone(t.Players[i].Avoid)
	}
	if t.Latencies != nil {
		l := make(map[string]float64, len(t.Latencies))
		for k, v := range t.Latencies {
			l[k] = v
		}
		t.Latencies = l
	}
	t.Attributes = cloneAttributes(t.Attributes)
	if t.Assignment != nil {
		a := *t.Assignment
		a.Teams = slices.Clone(a.Teams)
		for i := range a.Teams {
			a.Teams[i] = slices.Clone(a.Teams[i])
		}
		a.Connection = slices.Clone(a.Connection)
		a.Joined = slices.Clone(a.Joined)
		for i := range a.Joined {
			a.Joined[i] = slices.Clone(a.Joined[i])
		}
		a.TeamNames, a.Roles, a.OpenSlots = slices.Clone(a.TeamNames), maps.Clone(a.Roles), slices.Clone(a.OpenSlots)
		t.Assignment = &a
	}
	if p := t.Proposal; p != nil {
		c := *p
		c.Attributes = slices.Clone(p.Attributes)
		c.Teams = slices.Clone(p.Teams)
		for i := range c.Teams {
			c.Teams[i] = slices.Clone(c.Teams[i])
		}
		t.Proposal = &c
	}
	if b := t.Backfill; b != nil {
		c := *b
		c.Teams = slices.Clone(b.Teams)
		for i := range c.Teams {
			c.Teams[i].Players = slices.Clone(c.Teams[i].Players)
			c.Teams[i].Bots = slices.Clone(c.Teams[i].Bots)
		}
		c.OpenSlots = slices.Clone(b.OpenSlots)
		if b.Bots != nil {
			r := *b.Bots
			c.Bots = &r
		}
		t.Backfill = &c
	}
	return t
}

// Clone is a deep copy of m.
func (m Match) Clone() Match {
	m.Teams = slices.Clone(m.Teams)
	for i := range m.Teams {
		m.Teams[i].Players = slices.Clone(m.Teams[i].Players)
		m.Teams[i].Roles = slices.Clone(m.Teams[i].Roles)
	}
	m.Pairs = slices.Clone(m.Pairs)
	m.Attributes = slices.Clone(m.Attributes)
	m.Connection = slices.Clone(m.Connection)
	return m
}

// Clone is a deep copy of p.
func (p Proposal) Clone() Proposal {
	p.Match = p.Match.Clone()
	p.Answers = maps.Clone(p.Answers)
	return p
}

// Clone is a deep copy of st.
func (st Standing) Clone() Standing {
	st.Dodges, st.Leaves = slices.Clone(st.Dodges), slices.Clone(st.Leaves)
	return st
}

// cloneShape copies the shape's maps and slices, for a store that hands out copies.
func cloneShape(q *Queue) {
	q.MinTeamSize = slices.Clone(q.MinTeamSize)
	q.Composition = maps.Clone(q.Composition)
	q.Roles = slices.Clone(q.Roles)
	if o := q.Avoid.OptionalAfterS; o != nil {
		q.Avoid.OptionalAfterS = new(*o)
	}
	defs := slices.Clone(q.TeamDefs)
	for i := range defs {
		defs[i].MinSize = slices.Clone(defs[i].MinSize)
		defs[i].Composition = maps.Clone(defs[i].Composition)
	}
	q.TeamDefs = defs
}

// cloneAttributes copies a ticket's attributes (the lists included).
func cloneAttributes(attrs map[string]matchrules.Value) map[string]matchrules.Value {
	if attrs == nil {
		return nil
	}
	out := make(map[string]matchrules.Value, len(attrs))
	for k, v := range attrs {
		v.List = slices.Clone(v.List)
		out[k] = v
	}
	return out
}
