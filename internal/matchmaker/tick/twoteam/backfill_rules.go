package twoteam

import (
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// A backfill ticket's rules: the running match's values (Ticket.Attributes of the backfill
// ticket) bind its joiners as an anchor's bind its candidates, one joiner at a time. For
// each equal, intersect and distance rule that binds both the backfill ticket (by its own
// wait) and the joiner, and whose attribute the backfill ticket gives: the same value; at
// least min_common values in common with the backfill's list; values within the smaller of
// the two tolerances. A backfill ticket that gives no value of an attribute is not bound by
// its rules (defaults do not apply to it), and team_balance is left to the late-joiner
// rule, which places each joiner on the team that keeps the match the most even.

// bfRule is one rule as it binds the joiners of one backfill ticket.
type bfRule struct {
	data      *ruleData
	valueRank int32   // equal: the backfill's value's rank; -1 when no live ticket has it
	list      []int32 // intersect: the ranks of the backfill's values that live tickets list
	number    float64 // distance: the backfill's value
	tolerance float64 // distance: the backfill's tolerance
}

// backfillRules returns the rules that bind the joiners of backfill ticket t.
func (p *pass) backfillRules(t *matchpool.Ticket) []bfRule {
	if !p.hasRules || len(t.Attributes) == 0 {
		return nil
	}
	var out []bfRule
	wait := p.now - t.WaitingSince
	for i := range p.rules {
		d := &p.rules[i]
		v, ok := t.Attributes[d.rule.Attribute]
		if !ok || !d.rule.ReadsAttribute() || !d.rule.BindsValue(wait, &v) {
			continue
		}
		x := bfRule{data: d, valueRank: -1}
		switch d.rule.Kind {
		case matchrules.RuleEqual:
			var found bool
			var k int
			if d.attr.Type == matchrules.TypeNumber {
				k, found = slices.BinarySearch(d.nums, v.Num)
			} else {
				k, found = slices.BinarySearch(d.names, v.Str)
			}
			if found {
				x.valueRank = int32(k)
			}
		case matchrules.RuleIntersect:
			for _, s := range v.List {
				if k, found := slices.BinarySearch(d.names, s); found {
					x.list = append(x.list, int32(k))
				}
			}
			slices.Sort(x.list)
		case matchrules.RuleDistance:
			x.number, x.tolerance = v.Num, matchrules.Current(d.rule.Expansions, wait)
		}
		out = append(out, x)
	}
	return out
}

// joins reports whether the ticket at c keeps the backfill's rules rs.
func joins(rs []bfRule, c int32) bool {
	for _, x := range rs {
		d := x.data
		if !d.bound[c] {
			continue
		}
		switch d.rule.Kind {
		case matchrules.RuleEqual:
			if d.valueRank[c] != x.valueRank {
				return false
			}
		case matchrules.RuleIntersect:
			common := 0
			for _, id := range d.list(c) {
				if _, found := slices.BinarySearch(x.list, id); found {
					common++
				}
			}
			if common < d.rule.MinCommonValues() {
				return false
			}
		case matchrules.RuleDistance:
			if matchrules.Distance(d.number[c], x.number) > min(d.tolerance[c], x.tolerance) {
				return false
			}
		}
	}
	return true
}
