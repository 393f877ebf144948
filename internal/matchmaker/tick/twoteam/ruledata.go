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
	rule      *matchrules.Rule
	attr      matchrules.Attribute
	readIndex int    // the attribute's index in pass.read
	bound     []bool // the rule still binds the ticket (its wait < OptionalAfterS)

	// equal: the value's rank among the distinct values of the live tickets, in order
	// (strings by bytes, numbers by value); names or nums hold them by rank.
	valueRank []int32
	// distance: the value; distance and team_balance: the current tolerance.
	number, tolerance []float64
	// intersect: a ticket's list is ids[off[pos]:off[pos+1]], ranks ascending; and when
	// the rule's values are at most 64, the list as a bit set of ranks.
	listStart, listRanks []int32
	listSet              []uint64

	names  []string
	nums   []float64
	setBuf []uint64

	// by rank, as read
	idByAge, listStartByAge, listRanksByAge []int32
	numberByAge                             []float64
	interned                                intern.Table
	numberIDs                               map[float64]int32
}

// declare prepares readAttributes for a pass: the attributes the rules
// read, each once, and the rules' buffers.
func (p *pass) declare(cfg *matchrules.Config) {
	p.readAttrs = p.readAttrs[:0]
	if cap(p.rules) < len(cfg.Rules) {
		p.rules = make([]ruleData, len(cfg.Rules))
	}
	p.rules = p.rules[:len(cfg.Rules)]
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		d := &p.rules[i]
		*d = ruleData{rule: r, attr: cfg.Attributes[r.Attribute], readIndex: -1, bound: d.bound, valueRank: d.valueRank, number: d.number,
			tolerance: d.tolerance, listStart: d.listStart, listRanks: d.listRanks, setBuf: d.setBuf, idByAge: d.idByAge[:0], listStartByAge: d.listStartByAge[:0], listRanksByAge: d.listRanksByAge[:0], numberByAge: d.numberByAge[:0],
			interned: intern.Table{Names: d.interned.Names[:0]}}
		if !r.ReadsAttribute() {
			continue
		}
		d.readIndex = slices.IndexFunc(p.readAttrs, func(x readAttr) bool { return x.name == r.Attribute })
		if d.readIndex < 0 {
			d.readIndex = len(p.readAttrs)
			p.readAttrs = append(p.readAttrs, readAttr{name: r.Attribute, attr: d.attr, rule: r.Name})
		}
		p.readAttrs[d.readIndex].rules = append(p.readAttrs[d.readIndex].rules, i)
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
	for j := range p.readAttrs {
		x := &p.readAttrs[j]
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
				d.idByAge = append(d.idByAge, d.intern(&v))
			case matchrules.RuleIntersect:
				d.listStartByAge = append(d.listStartByAge, int32(len(d.listRanksByAge)))
				for _, s := range v.List {
					d.listRanksByAge = append(d.listRanksByAge, d.interned.ID(s))
				}
			case matchrules.RuleDistance:
				d.numberByAge = append(d.numberByAge, v.Num)
			}
		}
	}
	if found == len(t.Attributes) {
		return
	}
	for name, v := range t.Attributes {
		if slices.ContainsFunc(p.readAttrs, func(x readAttr) bool { return x.name == name }) {
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

// readBound reads whether the rule binds each ticket, by position.
func (d *ruleData) readBound(p *pass, tickets []matchpool.Ticket) {
	r := d.rule
	d.bound = scratch.Resize(d.bound, len(p.nodes))
	for pos := range p.nodes {
		t := &tickets[p.nodes[pos].input]
		d.bound[pos] = r.BindsAt(p.now - t.WaitingSince)
		if !d.bound[pos] && r.OptionalOnly != "" {
			d.bound[pos] = r.BindsValue(p.now-t.WaitingSince, d.valueOf(t))
		}
	}
}

// valueOf is t's value of the rule's attribute: its own, else the declaration's default
// (validated: one of them is there).
func (d *ruleData) valueOf(t *matchpool.Ticket) *matchrules.Value {
	if v, ok := t.Attributes[d.rule.Attribute]; ok {
		return &v
	}
	if d.attr.Default != nil {
		return d.attr.Default
	}
	return &matchrules.Value{}
}

// intern numbers an equal rule's value in order of first sight.
func (d *ruleData) intern(v *matchrules.Value) int32 {
	if d.attr.Type != matchrules.TypeNumber {
		return d.interned.ID(v.Str)
	}
	if d.numberIDs == nil {
		d.numberIDs = make(map[float64]int32)
	}
	id, ok := d.numberIDs[v.Num]
	if !ok {
		id = int32(len(d.nums))
		d.numberIDs[v.Num] = id
		d.nums = append(d.nums, v.Num)
	}
	return id
}

// readRules gathers the rules' values by position (after init has placed the tickets),
// ranks them, and reads what changes with the wait: whether each rule binds each ticket,
// and its tolerance.
func (p *pass) readRules(tickets []matchpool.Ticket, cfg *matchrules.Config) {
	p.hasRules, p.judgesMatch, p.classesPerRegion, p.dims, p.partitionRule = len(cfg.Rules) > 0, false, 1, p.dims[:0], -1
	p.hasBalanceRule = false
	if !p.hasRules {
		p.rules = p.rules[:0]
		return
	}
	defer p.partition()
	n := len(p.nodes)
	for i := range p.rules {
		d := &p.rules[i]
		r := d.rule
		p.judgesMatch = p.judgesMatch || r.JudgedOnMatch()
		p.hasBalanceRule = p.hasBalanceRule || r.Kind == matchrules.RuleTeamBalance
		d.readBound(p, tickets)
		switch r.Kind {
		case matchrules.RuleEqual:
			d.valueRank = scratch.Resize(d.valueRank, n)
			for pos := range p.nodes {
				d.valueRank[pos] = d.idByAge[p.nodes[pos].rank]
			}
			if d.attr.Type == matchrules.TypeNumber {
				d.renumber(len(d.nums), func(a, b int32) int { return cmp.Compare(d.nums[a], d.nums[b]) }, d.valueRank)
				slices.Sort(d.nums)
			} else {
				d.names = d.interned.Names
				d.renumber(len(d.names), func(a, b int32) int { return cmp.Compare(d.names[a], d.names[b]) }, d.valueRank)
				d.names = slices.Clone(d.names) // the interner's array is the pass's
				slices.Sort(d.names)
			}
		case matchrules.RuleIntersect:
			d.listStartByAge = append(d.listStartByAge, int32(len(d.listRanksByAge)))
			d.names = d.interned.Names
			d.renumber(len(d.names), func(a, b int32) int { return cmp.Compare(d.names[a], d.names[b]) }, d.listRanksByAge)
			d.names = slices.Clone(d.names)
			slices.Sort(d.names)
			d.listStart, d.listRanks = scratch.Resize(d.listStart, n+1), d.listRanks[:0]
			for pos := range p.nodes {
				k := p.nodes[pos].rank
				d.listStart[pos] = int32(len(d.listRanks))
				d.listRanks = append(d.listRanks, d.listRanksByAge[d.listStartByAge[k]:d.listStartByAge[k+1]]...)
				intern.SortIDs(d.listRanks[d.listStart[pos]:])
			}
			d.listStart[n] = int32(len(d.listRanks))
			d.listSet = nil
			if len(d.names) <= 64 {
				d.listSet = scratch.Resize(d.setBuf, n)
				d.setBuf = d.listSet
				for pos := range n {
					var b uint64
					for _, id := range d.listRanks[d.listStart[pos]:d.listStart[pos+1]] {
						b |= 1 << id
					}
					d.listSet[pos] = b
				}
			}
		case matchrules.RuleDistance:
			d.number = scratch.Resize(d.number, n)
			for pos := range p.nodes {
				if r.ReadsRating() {
					d.number[pos] = p.nodes[pos].rating // the ticket's (mean) rating
					continue
				}
				d.number[pos] = d.numberByAge[p.nodes[pos].rank]
			}
		}
		if r.HasTolerance() {
			d.tolerance = scratch.Resize(d.tolerance, n)
			for pos := range p.nodes {
				d.tolerance[pos] = matchrules.Current(r.Expansions, p.now-tickets[p.nodes[pos].input].WaitingSince)
			}
		}
	}
}

// partition links the tickets by the value of the first equal rule that binds every
// ticket at any wait, if there is one (pass.partitionRule): the anchors' walks then meet only the
// candidates of their own value, where a walk over all of them would turn the others away
// one by one (3 in 4 with 4 modes).
func (p *pass) partition() {
	p.partitionRule = slices.IndexFunc(p.rules, func(d ruleData) bool {
		return d.rule.Kind == matchrules.RuleEqual && d.rule.OptionalAfterS == nil
	})
	if p.partitionRule < 0 {
		return
	}
	d := &p.rules[p.partitionRule]
	n := len(p.nodes)
	p.partPrev, p.partNext = scratch.Resize(p.partPrev, n), scratch.Resize(p.partNext, n)
	last := make([]int32, len(d.names)+len(d.nums))
	for i := range last {
		last[i] = -1
	}
	for pos := range int32(n) {
		v := d.valueRank[pos]
		p.partPrev[pos], p.partNext[pos] = last[v], -1
		if last[v] >= 0 {
			p.partNext[last[v]] = pos
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
func (d *ruleData) list(pos int32) []int32 { return d.listRanks[d.listStart[pos]:d.listStart[pos+1]] }
