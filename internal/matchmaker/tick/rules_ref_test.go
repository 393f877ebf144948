package tick

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/twoteam"
)

// The rules the plain way, for the reference: what a rule means of a set of tickets, read
// from the definitions (DESIGN, "Match rules"), and the classes of an anchor as classes.go
// documents them, enumerated by value rather than computed as bits.

func (w *world) wait(i int) float64 { return w.now - w.tk[i].WaitingSince }

func (w *world) binds(r matchrules.Rule, i int) bool {
	return r.OptionalAfterS == nil || w.wait(i) < *r.OptionalAfterS
}

// val is ticket i's value of attribute name, its default when it gives none; the reserved
// rating is the ticket's (mean) rating.
func (w *world) val(name string, i int) matchrules.Value {
	if name == matchrules.RatingAttribute && w.tk[i].Backfill == nil {
		return matchrules.NumberValue(w.mean(i))
	}
	if v, ok := w.tk[i].Attributes[name]; ok {
		return v
	}
	return *w.cfg.Attributes[name].Default
}

func (w *world) tol(r matchrules.Rule, i int) float64 { return w.stepAt(r.Expansions, i) }

// bound is the tickets of s that r binds.
func (w *world) bound(r matchrules.Rule, s []int) []int {
	var out []int
	for _, i := range s {
		if w.binds(r, i) {
			out = append(out, i)
		}
	}
	return out
}

func sameValue(a, b matchrules.Value) bool {
	return a.Type == b.Type && a.Str == b.Str && a.Num == b.Num
}

// common is the values every list of the tickets of s holds, sorted.
func (w *world) common(name string, s []int) []string {
	var out []string
	for _, x := range w.val(name, s[0]).List {
		if !slices.ContainsFunc(s, func(i int) bool { return !slices.Contains(w.val(name, i).List, x) }) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// brokenRule is the first rule the match s breaks, by its definition, or "".
func (w *world) brokenRule(s []int) string {
	for _, r := range w.cfg.Rules {
		b := w.bound(r, s)
		if len(b) == 0 {
			continue
		}
		tol := math.Inf(1)
		for _, i := range b {
			if r.HasTolerance() {
				tol = min(tol, w.tol(r, i))
			}
		}
		ok := true
		switch r.Kind {
		case matchrules.RuleEqual:
			ok = !slices.ContainsFunc(b, func(i int) bool { return !sameValue(w.val(r.Attribute, i), w.val(r.Attribute, b[0])) })
		case matchrules.RuleIntersect:
			ok = len(w.common(r.Attribute, b)) >= r.MinCommonValues()
		case matchrules.RuleDistance:
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, i := range b {
				lo, hi = min(lo, w.val(r.Attribute, i).Num), max(hi, w.val(r.Attribute, i).Num)
			}
			ok = hi-lo <= tol
		case matchrules.RuleTeamBalance:
			ok = w.bestSplit(s)/float64(w.t) <= tol
		}
		if !ok {
			return r.Name
		}
	}
	return ""
}

// matchLevelBroken: the first rule judged on the match (distance, team_balance) that s
// breaks, or "".
func (w *world) matchLevelBroken(s []int) string {
	name := w.brokenRule(s)
	if i := slices.IndexFunc(w.cfg.Rules, func(r matchrules.Rule) bool { return r.Name == name }); i >= 0 && !w.cfg.Rules[i].HasTolerance() {
		panic(fmt.Sprintf("match %v breaks class rule %q", s, name))
	}
	return name
}

func (w *world) hasMatchLevel() bool {
	return slices.ContainsFunc(w.cfg.Rules, func(r matchrules.Rule) bool { return r.HasTolerance() })
}

// pickBroken: the match s breaks a rule judged on it or the balance.
func (w *world) pickBroken(s []int) bool {
	broken, _ := w.pickBrokenWhy(s)
	return broken
}

// pickBrokenWhy: the match s breaks a rule judged on it, or else the balance (overBound).
func (w *world) pickBrokenWhy(s []int) (broken, overBound bool) {
	if w.hasMatchLevel() && w.matchLevelBroken(s) != "" {
		return true, false
	}
	if w.balanceBroken(s) {
		return true, true
	}
	return false, false
}

// balanceBroken: in a queue without a team_balance rule, the match s holds a party and its
// teams' averages differ by more than matchrules.DefaultBalance of its anchor's interval
// (up to the sums' rounding).
func (w *world) balanceBroken(s []int) bool {
	if w.plain || slices.ContainsFunc(w.cfg.Rules, func(r matchrules.Rule) bool { return r.Kind == matchrules.RuleTeamBalance }) || !w.holdsParty(s) {
		return false
	}
	return w.bestSplit(s)/float64(w.t) > matchrules.DefaultBalance*w.interval(s[0])+1e-9*(1+math.Abs(w.mean(s[0])))
}

// holdsParty: a ticket of s has more than one player.
func (w *world) holdsParty(s []int) bool {
	return slices.ContainsFunc(s, func(i int) bool { return len(w.tk[i].Ratings) > 1 })
}

// total is the sum of ticket i's ratings.
func (w *world) total(i int) float64 {
	t := 0.0
	for _, r := range w.tk[i].Ratings {
		t += r
	}
	return t
}

// worthLookingAhead: the pick s of anchor a holds a party, is few enough tickets for the
// look-ahead, and its teams differ by more than twoteam's evenEnough of the anchor's
// interval.
func (w *world) worthLookingAhead(a int, s []int) bool {
	return len(s) <= lookAheadTickets+1 && w.holdsParty(s) && w.bestSplit(s) > evenEnough*w.interval(a)*float64(w.t)
}

// The look-ahead's bounds, as twoteam's (evener.go).
const (
	lookAheadTickets = 10
	evenEnough       = 0.02
)

// evenestOf: the most even match of anchor a with some of around (the anchor first, the
// others in around's order), by brute force, and its teams' difference; of the equally even
// (to the sums' rounding), the one of the least set of candidates (bit i for around[i]).
func (w *world) evenestOf(a int, around []int) ([]int, float64, bool) {
	best, bestSet := math.Inf(1), -1
	diffs := make([]float64, 1<<len(around))
	for m := range diffs {
		s := []int{a}
		for b, i := range around {
			if m>>b&1 != 0 {
				s = append(s, i)
			}
		}
		diffs[m] = math.Inf(1)
		if w.players(s) == 2*w.t {
			diffs[m] = w.bestSplit(s)
		}
		best = min(best, diffs[m])
	}
	if math.IsInf(best, 1) {
		return nil, 0, false
	}
	tol := 1e-9 * (1 + math.Abs(w.total(a)) + sumAbs(w, around))
	for m, d := range diffs {
		if d <= best+tol {
			bestSet = m
			break
		}
	}
	s := []int{a}
	for b, i := range around {
		if bestSet>>b&1 != 0 {
			s = append(s, i)
		}
	}
	return s, best, true
}

// admitsAll: candidate i against the anchor a, as every ticket of a match must be: equal
// rules binding both, the same value; distance rules binding both, within the smaller
// tolerance.
func (w *world) admitsAll(a, i int) bool {
	for _, r := range w.cfg.Rules {
		if !w.binds(r, a) || !w.binds(r, i) {
			continue
		}
		switch r.Kind {
		case matchrules.RuleEqual:
			if !sameValue(w.val(r.Attribute, a), w.val(r.Attribute, i)) {
				return false
			}
		case matchrules.RuleDistance:
			if math.Abs(w.val(r.Attribute, a).Num-w.val(r.Attribute, i).Num) > min(w.tol(r, a), w.tol(r, i)) {
				return false
			}
		}
	}
	return true
}

// classWindow is a distance rule's window of values, as twoteam's classes slide them.
type classWindow struct{ t, lo, hi float64 }

// class is one class of an anchor: a region and, per rule with classes, a key: the value
// (equal) or the set of values (intersect) its tickets have; unboundOnly, a class only
// tickets the rule does not bind are in.
type class struct {
	region string
	keys   []classKey
}

type classKey struct {
	rule        matchrules.Rule
	value       matchrules.Value
	set         []string
	unboundOnly bool
	win         *classWindow // distance, the anchor bound
}

// universe is the distinct values of attribute name among the live tickets, sorted (lists
// flattened).
func (w *world) universe(name string) []matchrules.Value {
	var out []matchrules.Value
	for _, i := range w.live {
		v := w.val(name, i)
		vs := []matchrules.Value{v}
		if v.Type == matchrules.TypeStringList {
			vs = nil
			for _, s := range v.List {
				vs = append(vs, matchrules.StringValue(s))
			}
		}
		for _, x := range vs {
			if !slices.ContainsFunc(out, func(y matchrules.Value) bool { return sameValue(x, y) }) {
				out = append(out, x)
			}
		}
	}
	slices.SortFunc(out, func(a, b matchrules.Value) int { return cmp.Or(cmp.Compare(a.Num, b.Num), cmp.Compare(a.Str, b.Str)) })
	return out
}

// combos lists the sets of m of xs, in lexicographic order of their indices.
func combos(xs []string, m int) [][]string {
	if m == 0 {
		return [][]string{nil}
	}
	var out [][]string
	for i := range xs {
		for _, rest := range combos(xs[i+1:], m-1) {
			out = append(out, append([]string{xs[i]}, rest...))
		}
	}
	return out
}

// classes is the anchor's classes, in order, the first twoteam.MaxClasses; nil when a rule rules
// the anchor out.
func (w *world) classes(a int) []class {
	out := []class{}
	for _, r := range w.okRegions([]int{a}) {
		out = append(out, class{region: r})
	}
	for _, r := range w.cfg.Rules {
		var keys []classKey
		switch {
		case r.Kind == matchrules.RuleEqual && !w.binds(r, a):
			for _, v := range w.universe(r.Attribute) {
				keys = append(keys, classKey{rule: r, value: v})
			}
		case r.Kind == matchrules.RuleDistance && w.binds(r, a):
			// Windows of width T, each tolerance T of the expansions up to the anchor's, in
			// the steps' order, that hold the anchor's value, sliding by T/twoteam.DistanceWindows.
			x, tol := w.val(r.Attribute, a).Num, w.tol(r, a)
			seen := map[float64]bool{}
			for _, s := range r.Expansions {
				t := s.Value
				if t > tol || seen[t] {
					continue
				}
				seen[t] = true
				for j := 0; j <= twoteam.DistanceWindows; j++ {
					lo := x - t + float64(j)*t/twoteam.DistanceWindows
					keys = append(keys, classKey{rule: r, win: &classWindow{t, lo, lo + t}})
					if t == 0 {
						break
					}
				}
			}
		case r.Kind == matchrules.RuleIntersect:
			var ref []string
			if w.binds(r, a) {
				ref = slices.Sorted(slices.Values(w.val(r.Attribute, a).List))
			} else {
				for _, v := range w.universe(r.Attribute) {
					ref = append(ref, v.Str)
				}
			}
			ref = ref[:min(len(ref), matchrules.MaxListItems)]
			switch {
			case len(ref) < r.MinCommonValues() && w.binds(r, a):
				return nil
			case len(ref) < r.MinCommonValues():
				keys = []classKey{{rule: r, unboundOnly: true}}
			default:
				for _, s := range combos(ref, r.MinCommonValues()) {
					keys = append(keys, classKey{rule: r, set: s})
				}
			}
		default:
			continue
		}
		keys = keys[:min(len(keys), twoteam.MaxClasses)]
		var next []class
		for _, c := range out {
			for _, k := range keys {
				next = append(next, class{region: c.region, keys: append(slices.Clone(c.keys), k)})
			}
		}
		out = next
	}
	return out[:min(len(out), twoteam.MaxClasses)]
}

// inClass: ticket i is in class c (the anchor a's).
func (w *world) inClass(a, i int, c class) bool {
	if !slices.Contains(w.okRegions([]int{a, i}), c.region) {
		return false
	}
	for _, k := range c.keys {
		if !w.binds(k.rule, i) {
			continue
		}
		v := w.val(k.rule.Attribute, i)
		switch {
		case k.unboundOnly:
			return false
		case k.win != nil && !(w.tol(k.rule, i) >= k.win.t && k.win.lo <= v.Num && v.Num <= k.win.hi):
			return false
		case k.rule.Kind == matchrules.RuleEqual && !sameValue(v, k.value):
			return false
		case k.rule.Kind == matchrules.RuleIntersect && slices.ContainsFunc(k.set, func(x string) bool { return !slices.Contains(v.List, x) }):
			return false
		}
	}
	return true
}

// sharesClass: every ticket of s (the anchor first) is in one class of the anchor's and
// admitted by it.
func (w *world) sharesClass(s []int) bool {
	a := s[0]
	for _, i := range s[1:] {
		if !w.admitsAll(a, i) {
			return false
		}
	}
	return slices.ContainsFunc(w.classes(a), func(c class) bool {
		return !slices.ContainsFunc(s, func(i int) bool { return !w.inClass(a, i, c) })
	})
}

// expectAttributes is Match.Attributes by the definition.
func (w *world) expectAttributes(s []int) []matchpool.MatchAttribute {
	var out []matchpool.MatchAttribute
	for _, r := range w.cfg.Rules {
		if !r.ReportsValue() {
			continue
		}
		b := w.bound(r, s)
		if len(b) == 0 {
			b = s
		}
		var v matchrules.Value
		if r.Kind == matchrules.RuleEqual {
			v = w.val(r.Attribute, b[0])
			if slices.ContainsFunc(b, func(i int) bool { return !sameValue(w.val(r.Attribute, i), v) }) {
				continue
			}
		} else {
			v = matchrules.ListValue(w.common(r.Attribute, b)...)
			if v.List == nil {
				v.List = []string{}
			}
		}
		if !slices.ContainsFunc(out, func(a matchpool.MatchAttribute) bool { return a.Name == r.Attribute }) {
			out = append(out, matchpool.MatchAttribute{Name: r.Attribute, Value: v})
		}
	}
	return out
}

// keepsBackfillRules: ticket i keeps backfill b's rules, by their definition for a
// backfill (backfill_rules.go): each equal, intersect or distance rule binding both, whose
// attribute b gives.
func (w *world) keepsBackfillRules(b, i int) bool {
	for _, r := range w.cfg.Rules {
		v, ok := w.tk[b].Attributes[r.Attribute]
		if !ok || r.Kind == matchrules.RuleTeamBalance || !w.binds(r, b) || !w.binds(r, i) {
			continue
		}
		x := w.val(r.Attribute, i)
		switch r.Kind {
		case matchrules.RuleEqual:
			if !sameValue(x, v) {
				return false
			}
		case matchrules.RuleIntersect:
			common := 0
			for _, s := range x.List {
				if slices.Contains(v.List, s) {
					common++
				}
			}
			if common < r.MinCommonValues() {
				return false
			}
		case matchrules.RuleDistance:
			if math.Abs(x.Num-v.Num) > min(w.tol(r, i), w.stepAt(r.Expansions, b)) {
				return false
			}
		}
	}
	return true
}
