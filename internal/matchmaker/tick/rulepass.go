package tick

import (
	"cmp"
	"slices"
)

// ruleData is what a pass reads of one rule on every live ticket, by position, read once
// in init: the searches compare small integers and floats, never strings or maps.
type ruleData struct {
	rule  *Rule
	attr  Attribute
	bound []bool // the rule still binds the ticket (its wait < OptionalAfterS)

	// equal: the value's rank among the distinct values of the live tickets, in order
	// (strings by bytes, numbers by value); names or nums hold them by rank.
	id []int32
	// distance: the value; distance and team_balance: the current tolerance.
	num, tol []float64
	// intersect: a ticket's list is ids[off[pos]:off[pos+1]], ranks ascending.
	off, ids []int32

	names []string
	nums  []float64
}

// value is ticket t's value of the rule's attribute, its default when it gives none.
func (d *ruleData) value(t *Ticket) Value {
	if v, ok := t.Attributes[d.rule.Attribute]; ok {
		return v
	}
	return *d.attr.Default // validated: a ticket without it has a default
}

// readRules fills p.rules from the live tickets, by position (after init has placed them).
func (p *pass) readRules(tickets []Ticket, cfg *Config) {
	p.ruled, p.matchLevel, p.inner, p.dims = len(cfg.Rules) > 0, false, 1, p.dims[:0]
	if !p.ruled {
		return
	}
	n := len(p.nodes)
	if cap(p.rules) < len(cfg.Rules) {
		p.rules = make([]ruleData, len(cfg.Rules))
	}
	p.rules = p.rules[:len(cfg.Rules)]
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		d := &p.rules[i]
		*d = ruleData{rule: r, attr: cfg.Attributes[r.Attribute], bound: resize(d.bound, n),
			id: d.id[:0], num: d.num[:0], tol: d.tol[:0], off: d.off[:0], ids: d.ids[:0]}
		p.matchLevel = p.matchLevel || r.hasTolerance()
		for pos := range p.nodes {
			t := &tickets[p.nodes[pos].in]
			d.bound[pos] = r.bindsAt(p.now - t.WaitingSince)
		}
		switch r.Kind {
		case RuleEqual:
			d.readEqual(tickets, p.nodes)
		case RuleIntersect:
			d.readIntersect(tickets, p.nodes)
		case RuleDistance:
			d.num = resize(d.num, n)
			for pos := range p.nodes {
				d.num[pos] = d.value(&tickets[p.nodes[pos].in]).Num
			}
		}
		if r.hasTolerance() {
			d.tol = resize(d.tol, n)
			for pos := range p.nodes {
				d.tol[pos] = current(r.Expansions, p.now-tickets[p.nodes[pos].in].WaitingSince)
			}
		}
	}
}

func (d *ruleData) readEqual(tickets []Ticket, nodes []node) {
	d.id = resize(d.id, len(nodes))
	if d.attr.Type == TypeNumber {
		seen := map[float64]int32{}
		for pos := range nodes {
			x := d.value(&tickets[nodes[pos].in]).Num
			id, ok := seen[x]
			if !ok {
				id = int32(len(d.nums))
				seen[x] = id
				d.nums = append(d.nums, x)
			}
			d.id[pos] = id
		}
		d.renumber(len(d.nums), func(a, b int32) int { return cmp.Compare(d.nums[a], d.nums[b]) }, d.id)
		slices.Sort(d.nums)
		return
	}
	seen := map[string]int32{}
	for pos := range nodes {
		s := d.value(&tickets[nodes[pos].in]).Str
		id, ok := seen[s]
		if !ok {
			id = int32(len(d.names))
			seen[s] = id
			d.names = append(d.names, s)
		}
		d.id[pos] = id
	}
	d.renumber(len(d.names), func(a, b int32) int { return cmp.Compare(d.names[a], d.names[b]) }, d.id)
	slices.Sort(d.names)
}

func (d *ruleData) readIntersect(tickets []Ticket, nodes []node) {
	d.off = resize(d.off, len(nodes)+1)
	seen := map[string]int32{}
	var last []string // tickets often list what the previous one did
	var lastIDs []int32
	for pos := range nodes {
		d.off[pos] = int32(len(d.ids))
		list := d.value(&tickets[nodes[pos].in]).List
		if slices.Equal(list, last) {
			d.ids = append(d.ids, lastIDs...)
			continue
		}
		from := len(d.ids)
		for _, s := range list {
			id, ok := seen[s]
			if !ok {
				id = int32(len(d.names))
				seen[s] = id
				d.names = append(d.names, s)
			}
			d.ids = append(d.ids, id)
		}
		last, lastIDs = list, d.ids[from:]
	}
	d.off[len(nodes)] = int32(len(d.ids))
	d.renumber(len(d.names), func(a, b int32) int { return cmp.Compare(d.names[a], d.names[b]) }, d.ids)
	slices.Sort(d.names)
	for pos := range nodes {
		slices.Sort(d.ids[d.off[pos]:d.off[pos+1]])
	}
}

// renumber replaces each id of ids (ids in order of first sight, n of them) by its rank in
// the order of compare, so that ranks compare as the values do.
func (d *ruleData) renumber(n int, compare func(a, b int32) int, ids []int32) {
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, compare)
	rank := make([]int32, n)
	for r, id := range order {
		rank[id] = int32(r)
	}
	for i, id := range ids {
		ids[i] = rank[id]
	}
}

// list is the intersect rule's list of the ticket at pos, as ranks ascending.
func (d *ruleData) list(pos int32) []int32 { return d.ids[d.off[pos]:d.off[pos+1]] }
