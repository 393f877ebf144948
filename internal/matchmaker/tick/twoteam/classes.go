package twoteam

import (
	"math"
	"math/bits"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Classes turn the rules that hold of a match as a whole into a per-ticket test, so that the
// search stays a walk over candidates with head counts per class, as latency's regions
// always were. A match satisfies the regions, an equal rule and an intersect rule exactly
// when its tickets share a class of each:
//   - latency: a region every ticket accepts;
//   - equal, the anchor bound: no class; a bound candidate must have the anchor's value;
//   - equal, the anchor not bound: one class per value the live tickets have;
//   - intersect: one class per set of min_common values drawn from the anchor's list (the
//     anchor bound) or from the values the live tickets list (not bound); a ticket is in
//     the classes whose values its list holds. With fewer values than min_common there, one
//     class that only tickets the rule does not bind are in.
//
// and, not exactly but soundly, distance with the anchor bound: for each tolerance T its
// expansions take that is at most the anchor's (in the steps' order), windows of width T
// that hold the anchor's value, starting at x - T + j*T/DistanceWindows for j = 0 ..
// DistanceWindows (one window for T = 0); a ticket is in a window when its value is in it
// and its own tolerance is at least T. Tickets that share a window keep the rule; a match
// that keeps it with a spread of at most (1 - 1/DistanceWindows) x the smallest tolerance
// of its bound tickets has its bound values in one window, so the search finds such
// matches. (With the anchor not bound, distance is judged on the match found.)
//
// A ticket the rule does not bind is in every class of the rule. An anchor's classes are
// the product of its regions' and its rules' classes, regions first, then the rules in
// their order, each rule's values in order (sets of values in lexicographic order of
// their ranks); the search keeps the first MaxClasses of them and a value list is cut to
// its first MaxListItems values.

// MaxClasses bounds the classes an anchor is searched in (see Run): the search keeps one
// set of head counts per class and a candidate's classes are a bit set of one word.
const MaxClasses = 64

// dim is one rule's classes for the anchor being served.
type dim struct {
	data  *ruleData
	count int // classes, 1..MaxClasses
	// intersect: ref are the ranks the classes' sets are drawn from, and class k holds the
	// tickets whose lists hold the ref values of bits sets[k] (nil when min_common is 1:
	// class k is the value ref[k]).
	refRanks []int32
	sets     []uint64
	// unboundOnly: the one class only tickets the rule does not bind are in.
	unboundOnly bool
	// distance: class k holds the tickets whose tolerance is at least windows[k].tolerance and value
	// is in [windows[k].lo, windows[k].hi].
	windows []window
}

// window is a class of a distance rule.
type window struct{ tolerance, lo, hi float64 }

// DistanceWindows is how many steps a distance rule's windows slide by across their width.
const DistanceWindows = 4

// anchorClasses sets the classes of anchor a (p.dims, p.classRegions, p.classesPerRegion) and
// returns the mask of the anchor's classes, 0 when it can have no match (a bound intersect
// rule whose list holds fewer than min_common values: p.excludingRule names it).
func (p *pass) anchorClasses(a int32) uint64 {
	p.dims, p.classSets, p.classWindows = p.dims[:0], p.classSets[:0], p.classWindows[:0] // the dimensions' parts are slices of classSets and classWindows
	inner := 1
	for i := range p.rules {
		d := &p.rules[i]
		bound := d.bound[a]
		if !d.rule.ReportsValue() && !(d.rule.Kind == matchrules.RuleDistance && bound) {
			continue
		}
		x := dim{data: d}
		switch {
		case d.rule.Kind == matchrules.RuleEqual && bound:
			continue // a filter: see admits
		case d.rule.Kind == matchrules.RuleDistance:
			x.windows = p.windows(d, a)
			x.count = len(x.windows)
		case d.rule.Kind == matchrules.RuleEqual:
			x.count = min(len(d.names)+len(d.nums), MaxClasses)
		default:
			m := d.rule.MinCommonValues()
			if bound {
				x.refRanks = d.list(a)
			} else {
				x.refRanks = ranks[:min(len(d.names), matchrules.MaxListItems)]
			}
			x.refRanks = x.refRanks[:min(len(x.refRanks), matchrules.MaxListItems)]
			switch {
			case len(x.refRanks) < m && bound:
				p.excludingRule = i
				return 0
			case len(x.refRanks) < m:
				x.count, x.unboundOnly = 1, true
			case m == 1:
				x.count = len(x.refRanks)
			default:
				from := len(p.classSets)
				p.classSets = combinations(p.classSets, len(x.refRanks), m, MaxClasses)
				x.sets = p.classSets[from:]
				x.count = len(x.sets)
			}
		}
		p.dims = append(p.dims, x)
		inner = min(inner*x.count, MaxClasses+1)
	}
	p.classesPerRegion = inner
	ma := p.nodes[a].regions
	if inner == 1 {
		p.classRegions = p.classRegions[:0]
		return ma // the classes are the regions, by id
	}
	p.classRegions = p.classRegions[:0]
	for m := ma; m != 0; m &= m - 1 {
		p.classRegions = append(p.classRegions, int8(bits.TrailingZeros64(m)))
	}
	n := min(len(p.classRegions)*inner, MaxClasses)
	return uint64(math.MaxUint64) >> (64 - n)
}

// classRegion is the region (id) of class k of the anchor being served.
func (p *pass) classRegion(k int) int {
	if p.classesPerRegion == 1 {
		return k
	}
	return int(p.classRegions[k/p.classesPerRegion])
}

// classesOf returns the classes of the anchor's that candidate c is in, given its regions
// in common with the anchor (m, by id); 0 with the index of the first rule (in their
// order) that rejects it: admits does not, or it is in none of the rule's classes.
func (p *pass) classesOf(a, c int32, m uint64) (uint64, int) {
	var dm [matchrules.MaxRules]uint64 // by dimension
	j := 0
	for i := range p.rules {
		d := &p.rules[i]
		if !p.admits(d, a, c) {
			return 0, i
		}
		if j < len(p.dims) && p.dims[j].data == d {
			if dm[j] = p.dims[j].mask(c); dm[j] == 0 {
				return 0, i
			}
			j++
		}
	}
	if p.classesPerRegion == 1 {
		return m, -1 // every rule has one class: the classes are the regions
	}
	cls, width := uint64(1), 1
	for j := len(p.dims) - 1; j >= 0; j-- { // the last one innermost
		cls = spread(dm[j], cls, width)
		width = min(width*p.dims[j].count, MaxClasses+1)
	}
	var r uint64
	for i, id := range p.classRegions {
		if m>>id&1 != 0 {
			r |= 1 << i
		}
	}
	if r = spread(r, cls, width); r == 0 { // its classes are beyond the first MaxClasses
		return 0, p.dims[len(p.dims)-1].ruleIndex(p)
	}
	return r, -1
}

// admits is the test of one candidate against the anchor that a rule needs of every
// ticket of a match with it: an equal rule binding both, the same value; a distance rule
// binding both, values within the smaller of their tolerances (the match's spread is at
// least that).
func (p *pass) admits(d *ruleData, a, c int32) bool {
	if !d.bound[a] || !d.bound[c] {
		return true
	}
	switch d.rule.Kind {
	case matchrules.RuleEqual:
		return d.valueRank[a] == d.valueRank[c]
	case matchrules.RuleDistance:
		return matchrules.Distance(d.number[a], d.number[c]) <= min(d.tolerance[a], d.tolerance[c])
	}
	return true
}

// mask is the classes of the dimension candidate c is in.
func (x *dim) mask(c int32) uint64 {
	all := uint64(math.MaxUint64) >> (64 - x.count)
	if !x.data.bound[c] {
		return all
	}
	if x.unboundOnly {
		return 0
	}
	if x.data.rule.Kind == matchrules.RuleEqual {
		if id := x.data.valueRank[c]; int(id) < x.count {
			return 1 << id
		}
		return 0
	}
	if x.windows != nil {
		var r uint64
		v, tol := x.data.number[c], x.data.tolerance[c]
		for k, w := range x.windows {
			if tol >= w.tolerance && w.lo <= v && v <= w.hi {
				r |= 1 << k
			}
		}
		return r
	}
	// The ref values c's list holds, as bits of ref's indices.
	var in uint64
	if set := x.data.listSet; set != nil { // every value's rank is below 64: lists are bit sets
		for k, id := range x.refRanks {
			in |= set[c] >> id & 1 << k
		}
	} else { // both ascending
		list, ref := x.data.list(c), x.refRanks
		for i, j := 0, 0; i < len(list) && j < len(ref); {
			switch {
			case list[i] < ref[j]:
				i++
			case list[i] > ref[j]:
				j++
			default:
				in |= 1 << j
				i++
				j++
			}
		}
	}
	if x.sets == nil {
		return in & all
	}
	var r uint64
	for k, s := range x.sets {
		if in&s == s {
			r |= 1 << k
		}
	}
	return r
}

// spread is the product of the classes outer and inner (width classes each): class k of
// outer and j of inner make class k*width+j; classes from MaxClasses on are dropped.
func spread(outer, inner uint64, width int) uint64 {
	var r uint64
	for m := outer; m != 0; m &= m - 1 {
		s := bits.TrailingZeros64(m) * width
		if s >= MaxClasses {
			break
		}
		r |= inner << s
	}
	return r
}

// combinations appends to out the sets of m of n indices (as bits), in lexicographic order
// of their indices, at most limit of them.
func combinations(out []uint64, n, m, limit int) []uint64 {
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	for from := len(out); len(out)-from < limit; {
		var s uint64
		for _, i := range idx {
			s |= 1 << i
		}
		out = append(out, s)
		i := m - 1
		for i >= 0 && idx[i] == n-m+i {
			i--
		}
		if i < 0 {
			break
		}
		idx[i]++
		for j := i + 1; j < m; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
	return out
}

// ranks are 0, 1, 2...: the ranks of the first values of a rule.
var ranks = func() (r [matchrules.MaxListItems]int32) {
	for i := range r {
		r[i] = int32(i)
	}
	return r
}()

// windows are the classes of distance rule d for the anchor a, which it binds: see the
// package's classes above.
func (p *pass) windows(d *ruleData, a int32) []window {
	from := len(p.classWindows)
	out := p.classWindows
	x, tol := d.number[a], d.tolerance[a]
	for i, s := range d.rule.Expansions {
		t := s.Value
		if t > tol || i > 0 && t == d.rule.Expansions[i-1].Value {
			continue
		}
		for j := range DistanceWindows + 1 {
			lo := x - t + float64(j)*t/DistanceWindows
			out = append(out, window{t, lo, lo + t})
			if t == 0 || len(out)-from == MaxClasses {
				break
			}
		}
		if len(out)-from == MaxClasses {
			break
		}
	}
	p.classWindows = out
	return out[from:]
}
