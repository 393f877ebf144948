package twoteam

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/intern"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// ruleData is what a pass reads of one rule on every live ticket, by position: the
// searches compare small integers and floats, never strings or maps. The values are read
// with the tickets, in age order (readAttributes), by rank, and gathered by position
// (readRules), as init does with ratings.
type ruleData struct {
	rule  *matchrules.Rule
	attr  matchrules.Attribute
	read  int    // the attribute's index in pass.read
	bound []bool // the rule still binds the ticket (its wait < OptionalAfterS)

	// equal: the value's rank among the distinct values of the live tickets, in order
	// (strings by bytes, numbers by value); names or nums hold them by rank.
	id []int32
	// distance: the value; distance and team_balance: the current tolerance.
	num, tol []float64
	// intersect: a ticket's list is ids[off[pos]:off[pos+1]], ranks ascending; and when
	// the rule's values are at most 64, the list as a bit set of ranks.
	off, ids []int32
	set      []uint64

	names  []string
	nums   []float64
	setBuf []uint64

	// by rank, as read
	idK, offK, idsK []int32
	numK            []float64
	strs            intern.Table
	numIDs          map[float64]int32
}

// declare prepares readAttributes for a pass: the attributes the rules
// read, each once, and the rules' buffers.
func (p *pass) declare(cfg *matchrules.Config) {
	p.read = p.read[:0]
	if cap(p.rules) < len(cfg.Rules) {
		p.rules = make([]ruleData, len(cfg.Rules))
	}
	p.rules = p.rules[:len(cfg.Rules)]
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		d := &p.rules[i]
		*d = ruleData{rule: r, attr: cfg.Attributes[r.Attribute], read: -1, bound: d.bound, id: d.id, num: d.num,
			tol: d.tol, off: d.off, ids: d.ids, setBuf: d.setBuf, idK: d.idK[:0], offK: d.offK[:0], idsK: d.idsK[:0], numK: d.numK[:0],
			strs: intern.Table{Names: d.strs.Names[:0]}}
		if !r.ReadsAttribute() {
			continue
		}
		d.read = slices.IndexFunc(p.read, func(x readAttr) bool { return x.name == r.Attribute })
		if d.read < 0 {
			d.read = len(p.read)
			p.read = append(p.read, readAttr{name: r.Attribute, attr: d.attr, rule: r.Name})
		}
		p.read[d.read].rules = append(p.read[d.read].rules, i)
	}
}

// readAttr is an attribute rules read: rule is the first one's name, rules their indices.
type readAttr struct {
	name, rule string
	attr       matchrules.Attribute
	rules      []int
}

// readAttributes checks ticket t's attributes, as Config.addAttributeFaults does, and
// reads the values the rules read (the defaults filled in) for the ticket of rank k, the
// next one. A ticket is looked up by the names the rules read, which is all its attributes
// unless it has some the queue does not declare: those are found only then, by a walk of
// the map.
func (p *pass) readAttributes(f *apperr.Fields, cfg *matchrules.Config, t *matchpool.Ticket, i int) {
	at := func(field string) string { return "tickets[" + strconv.Itoa(i) + "]." + field }
	found := 0
	for j := range p.read {
		x := &p.read[j]
		v, ok := t.Attributes[x.name]
		switch {
		case ok:
			found++
			if v.Type != x.attr.Type {
				matchrules.AddValueFaults(f, func() string { return at("attributes." + x.name) }, v, x.attr)
				v = matchrules.Value{} // the pass fails: any value holds the place
			} else if v.Type != matchrules.TypeString {
				matchrules.AddValueFaults(f, func() string { return at("attributes." + x.name) }, v, x.attr)
			}
		case x.attr.Default != nil:
			v = *x.attr.Default
		default:
			f.Add(at("attributes."+x.name), "is required: rule %q reads it and it has no default", x.rule)
		}
		for _, r := range x.rules {
			d := &p.rules[r]
			switch d.rule.Kind {
			case matchrules.RuleEqual:
				d.idK = append(d.idK, d.intern(&v))
			case matchrules.RuleIntersect:
				d.offK = append(d.offK, int32(len(d.idsK)))
				for _, s := range v.List {
					d.idsK = append(d.idsK, d.strs.ID(s))
				}
			case matchrules.RuleDistance:
				d.numK = append(d.numK, v.Num)
			}
		}
	}
	if found == len(t.Attributes) {
		return
	}
	for name, v := range t.Attributes {
		if slices.ContainsFunc(p.read, func(x readAttr) bool { return x.name == name }) {
			continue
		}
		a, ok := cfg.Attributes[name]
		if !ok {
			f.Add(at("attributes."+name), "is not an attribute the queue declares")
			continue
		}
		matchrules.AddValueFaults(f, func() string { return at("attributes." + name) }, v, a)
	}
}

// intern numbers an equal rule's value in order of first sight.
func (d *ruleData) intern(v *matchrules.Value) int32 {
	if d.attr.Type != matchrules.TypeNumber {
		return d.strs.ID(v.Str)
	}
	if d.numIDs == nil {
		d.numIDs = make(map[float64]int32)
	}
	id, ok := d.numIDs[v.Num]
	if !ok {
		id = int32(len(d.nums))
		d.numIDs[v.Num] = id
		d.nums = append(d.nums, v.Num)
	}
	return id
}

// readRules gathers the rules' values by position (after init has placed the tickets),
// ranks them, and reads what changes with the wait: whether each rule binds each ticket,
// and its tolerance.
func (p *pass) readRules(tickets []matchpool.Ticket, cfg *matchrules.Config) {
	p.ruled, p.matchLevel, p.inner, p.dims, p.part = len(cfg.Rules) > 0, false, 1, p.dims[:0], -1
	if !p.ruled {
		p.rules = p.rules[:0]
		return
	}
	defer p.partition()
	n := len(p.nodes)
	for i := range p.rules {
		d := &p.rules[i]
		r := d.rule
		p.matchLevel = p.matchLevel || r.JudgedOnMatch()
		d.bound = scratch.Resize(d.bound, n)
		for pos := range p.nodes {
			d.bound[pos] = r.BindsAt(p.now - tickets[p.nodes[pos].in].WaitingSince)
		}
		switch r.Kind {
		case matchrules.RuleEqual:
			d.id = scratch.Resize(d.id, n)
			for pos := range p.nodes {
				d.id[pos] = d.idK[p.nodes[pos].rank]
			}
			if d.attr.Type == matchrules.TypeNumber {
				d.renumber(len(d.nums), func(a, b int32) int { return cmp.Compare(d.nums[a], d.nums[b]) }, d.id)
				slices.Sort(d.nums)
			} else {
				d.names = d.strs.Names
				d.renumber(len(d.names), func(a, b int32) int { return cmp.Compare(d.names[a], d.names[b]) }, d.id)
				d.names = slices.Clone(d.names) // the interner's array is the pass's
				slices.Sort(d.names)
			}
		case matchrules.RuleIntersect:
			d.offK = append(d.offK, int32(len(d.idsK)))
			d.names = d.strs.Names
			d.renumber(len(d.names), func(a, b int32) int { return cmp.Compare(d.names[a], d.names[b]) }, d.idsK)
			d.names = slices.Clone(d.names)
			slices.Sort(d.names)
			d.off, d.ids = scratch.Resize(d.off, n+1), d.ids[:0]
			for pos := range p.nodes {
				k := p.nodes[pos].rank
				d.off[pos] = int32(len(d.ids))
				d.ids = append(d.ids, d.idsK[d.offK[k]:d.offK[k+1]]...)
				intern.SortIDs(d.ids[d.off[pos]:])
			}
			d.off[n] = int32(len(d.ids))
			d.set = nil
			if len(d.names) <= 64 {
				d.set = scratch.Resize(d.setBuf, n)
				d.setBuf = d.set
				for pos := range n {
					var b uint64
					for _, id := range d.ids[d.off[pos]:d.off[pos+1]] {
						b |= 1 << id
					}
					d.set[pos] = b
				}
			}
		case matchrules.RuleDistance:
			d.num = scratch.Resize(d.num, n)
			for pos := range p.nodes {
				if r.ReadsRating() {
					d.num[pos] = p.nodes[pos].key // the ticket's (mean) rating
					continue
				}
				d.num[pos] = d.numK[p.nodes[pos].rank]
			}
		}
		if r.HasTolerance() {
			d.tol = scratch.Resize(d.tol, n)
			for pos := range p.nodes {
				d.tol[pos] = matchrules.Current(r.Expansions, p.now-tickets[p.nodes[pos].in].WaitingSince)
			}
		}
	}
}

// partition links the tickets by the value of the first equal rule that binds every
// ticket at any wait, if there is one (pass.part): the anchors' walks then meet only the
// candidates of their own value, where a walk over all of them would turn the others away
// one by one (3 in 4 with 4 modes).
func (p *pass) partition() {
	p.part = slices.IndexFunc(p.rules, func(d ruleData) bool {
		return d.rule.Kind == matchrules.RuleEqual && d.rule.OptionalAfterS == nil
	})
	if p.part < 0 {
		return
	}
	d := &p.rules[p.part]
	n := len(p.nodes)
	p.pprev, p.pnext = scratch.Resize(p.pprev, n), scratch.Resize(p.pnext, n)
	last := make([]int32, len(d.names)+len(d.nums))
	for i := range last {
		last[i] = -1
	}
	for pos := range int32(n) {
		v := d.id[pos]
		p.pprev[pos], p.pnext[pos] = last[v], -1
		if last[v] >= 0 {
			p.pnext[last[v]] = pos
		}
		last[v] = pos
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
