package twoteam

import (
	"math"
	"math/bits"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// matchRulesHold checks the rules that are judged on a match as a whole, whose search
// cannot be a per-ticket test (classes.go): the spread of a distance rule's values and
// the teams' average difference (avgDiff, as the match reports it) against the smallest
// tolerance of the tickets each binds, and party_mix on the split made (team0: bit i set
// for c[i] on the anchor's team). A match that breaks one is turned down; the first turned
// down of an anchor's walk is what explain reports.
func (p *pass) matchRulesHold(c []int32, team0 uint32, avgDiff float64) bool {
	for i := range p.rules {
		d := &p.rules[i]
		if d.rule.Kind == matchrules.RulePartyMix {
			if !p.partyMixHolds(d, c, team0) {
				return false
			}
			continue
		}
		if !d.rule.HasTolerance() {
			continue
		}
		lo, hi, tol, any := math.Inf(1), math.Inf(-1), math.Inf(1), false
		for _, pos := range c {
			if !d.bound[pos] {
				continue
			}
			any = true
			tol = min(tol, d.tolerance[pos])
			if d.rule.Kind == matchrules.RuleDistance {
				lo, hi = min(lo, d.number[pos]), max(hi, d.number[pos])
			}
		}
		if !any {
			continue
		}
		spread := avgDiff
		if d.rule.Kind == matchrules.RuleDistance {
			spread = hi - lo
		}
		if spread > tol {
			if p.turnedDown.Rule == "" {
				p.turnedDown = matchpool.Wait{Rule: d.rule.Name, Kind: d.rule.Kind, Attribute: d.rule.Attribute,
					Candidates: len(c) - 1, Found: true, Value: spread, Tolerance: tol}
			}
			return false
		}
	}
	return true
}

// partyMixHolds checks a party_mix rule on a split, while the rule binds a ticket of it.
func (p *pass) partyMixHolds(d *ruleData, c []int32, team0 uint32) bool {
	var largest [2]int
	bound := false
	for i, pos := range c {
		side := 1 - int(team0>>i&1)
		largest[side] = max(largest[side], int(p.nodes[pos].size))
		bound = bound || d.bound[pos]
	}
	diff := largest[0] - largest[1]
	if !bound || max(diff, -diff) <= d.rule.MaxDifference {
		return true
	}
	if p.turnedDown.Rule == "" {
		p.turnedDown = matchpool.Wait{Rule: d.rule.Name, Kind: d.rule.Kind, Candidates: len(c) - 1, Found: true,
			Value: float64(max(diff, -diff)), Tolerance: float64(d.rule.MaxDifference)}
	}
	return false
}

// matchAttributes appends to p.attrs what the match's equal and intersect rules agreed on
// (Match.Attributes) and returns where they are.
func (p *pass) matchAttributes(c []int32) [2]int32 {
	from := int32(len(p.matchAttrs))
	for i := range p.rules {
		d := &p.rules[i]
		if !d.rule.ReportsValue() {
			continue
		}
		judged := p.judged[:0]
		for _, pos := range c {
			if d.bound[pos] {
				judged = append(judged, pos)
			}
		}
		p.judged = judged
		if len(judged) == 0 {
			judged = c
		}
		var v matchrules.Value
		listAt := len(p.matchLists)
		switch d.rule.Kind {
		case matchrules.RuleEqual:
			id := d.valueRank[judged[0]]
			if slices.ContainsFunc(judged, func(pos int32) bool { return d.valueRank[pos] != id }) {
				continue
			}
			if d.attr.Type == matchrules.TypeNumber {
				v = matchrules.NumberValue(d.nums[id])
			} else {
				v = matchrules.StringValue(d.names[id])
			}
		case matchrules.RuleIntersect:
			if d.listSet != nil { // lists as bit sets: the common values are their intersection
				common := ^uint64(0)
				for _, pos := range judged {
					common &= d.listSet[pos]
				}
				for ; common != 0; common &= common - 1 {
					p.matchLists = append(p.matchLists, d.names[bits.TrailingZeros64(common)]) // ranks ascending: sorted
				}
			} else {
				for _, id := range d.list(judged[0]) {
					if !slices.ContainsFunc(judged[1:], func(pos int32) bool {
						_, ok := slices.BinarySearch(d.list(pos), id)
						return !ok
					}) {
						p.matchLists = append(p.matchLists, d.names[id]) // ranks ascending: the values sorted
					}
				}
			}
			v = matchrules.ListValue(noValues...)
			if len(p.matchLists) > listAt {
				v.List = p.matchLists[listAt:len(p.matchLists):len(p.matchLists)]
			}
		}
		if slices.ContainsFunc(p.matchAttrs[from:], func(a matchpool.MatchAttribute) bool { return a.Name == d.rule.Attribute }) {
			continue // two rules on one attribute: the first one's
		}
		p.matchAttrs = append(p.matchAttrs, matchpool.MatchAttribute{Name: d.rule.Attribute, Value: v})
		p.matchListAt = append(p.matchListAt, int32(listAt))
	}
	return [2]int32{from, int32(len(p.matchAttrs))}
}

// noValues is the list of an intersect whose tickets, none bound, have no value in common.
var noValues = []string{}
