package tick

import (
	"math"
	"slices"
)

// matchRulesHold checks the rules that are judged on a match as a whole, whose search
// cannot be a per-ticket test (classes.go): the spread of a distance rule's values and
// the teams' average difference (avgDiff, as the match reports it) against the smallest
// tolerance of the tickets each binds. A match that breaks one is turned down; the first
// turned down of an anchor's walk is what explain reports.
func (p *pass) matchRulesHold(c []int32, avgDiff float64) bool {
	for i := range p.rules {
		d := &p.rules[i]
		if !d.rule.hasTolerance() {
			continue
		}
		lo, hi, tol, any := math.Inf(1), math.Inf(-1), math.Inf(1), false
		for _, pos := range c {
			if !d.bound[pos] {
				continue
			}
			any = true
			tol = min(tol, d.tol[pos])
			if d.rule.Kind == RuleDistance {
				lo, hi = min(lo, d.num[pos]), max(hi, d.num[pos])
			}
		}
		if !any {
			continue
		}
		spread := avgDiff
		if d.rule.Kind == RuleDistance {
			spread = hi - lo
		}
		if spread > tol {
			if p.turnedDown.Rule == "" {
				p.turnedDown = Wait{Rule: d.rule.Name, Kind: d.rule.Kind, Attribute: d.rule.Attribute,
					Candidates: len(c) - 1, Found: true, Value: spread, Tolerance: tol}
			}
			return false
		}
	}
	return true
}

// matchAttributes is what the match's equal and intersect rules agreed on (Match.Attributes).
func (p *pass) matchAttributes(c []int32) map[string]Value {
	var out map[string]Value
	for i := range p.rules {
		d := &p.rules[i]
		if !d.rule.classified() {
			continue
		}
		judged := c[:0:0]
		for _, pos := range c {
			if d.bound[pos] {
				judged = append(judged, pos)
			}
		}
		if len(judged) == 0 {
			judged = c
		}
		var v Value
		switch d.rule.Kind {
		case RuleEqual:
			id := d.id[judged[0]]
			if slices.ContainsFunc(judged, func(pos int32) bool { return d.id[pos] != id }) {
				continue
			}
			if d.attr.Type == TypeNumber {
				v = NumberValue(d.nums[id])
			} else {
				v = StringValue(d.names[id])
			}
		case RuleIntersect:
			common := slices.Clone(d.list(judged[0]))
			for _, pos := range judged[1:] {
				common = slices.DeleteFunc(common, func(id int32) bool {
					_, ok := slices.BinarySearch(d.list(pos), id)
					return !ok
				})
			}
			list := make([]string, len(common))
			for j, id := range common {
				list[j] = d.names[id] // ranks ascending: the values sorted
			}
			v = ListValue(list...)
		}
		if out == nil {
			out = make(map[string]Value, len(p.rules))
		}
		out[d.rule.Attribute] = v
	}
	return out
}
