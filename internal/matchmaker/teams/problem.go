package teams

import (
	"cmp"
	"slices"
	"sort"
)

// The engine behind Split and Rebalance's placement. A problem is: give each of u items
// (human weights) a team, where a "class" fixes how many items each team receives (caps) and
// what each team already holds (base: its bots at the mean weight in a split, its fixed
// players and bots in a rebalance). Within a class the totals are base + item sums, so the
// objective is a plain function of the totals; across classes the best candidates are merged.
//
// With bots a team's total depends on its bot count, which depends on the largest human team;
// enumerating classes (head-count vectors) makes that exact: for fixed head counts the bot
// counts are fixed, and each class is a subset-sum problem with a known offset.

// class is one head-count vector with the fixed part of each team's total.
type class struct {
	caps   []int     // items each team receives
	bots   []int     // bots each team gets (a split only)
	base   []float64 // total each team holds before any item joins
	lb     float64   // lower bound of the score of any assignment in the class
	spread int       // largest cap - smallest
}

// candidate is one assignment: the team of every item, and its score (lower is better).
type candidate struct {
	score  float64
	class  int
	assign []uint8
}

// shortlist keeps the best k distinct candidates, best first. A candidate enters only if it
// is strictly better than the worst kept one, so among equal scores the first found stays;
// the searches skip whatever cannot beat the worst kept one by more than rounding
// (problem.open), so equal scores cost nothing once the list is full.
type shortlist struct {
	k      int
	sym    bool // teams are interchangeable: candidates are compared as partitions
	dedupe bool // check new candidates against kept ones (heuristics may repeat a partition)
	list   []candidate
}

func (tp *shortlist) accepts(score float64) bool {
	return len(tp.list) < tp.k || score < tp.list[len(tp.list)-1].score
}

// insert adds a copy of assign; the caller has checked accepts.
func (tp *shortlist) insert(score float64, class int, assign []uint8) {
	if tp.dedupe {
		for _, c := range tp.list {
			if c.class == class && samePartition(c.assign, assign, tp.sym) {
				return
			}
		}
	}
	var buf []uint8
	if len(tp.list) == tp.k { // reuse the evicted candidate's buffer
		buf = tp.list[len(tp.list)-1].assign
		tp.list = tp.list[:len(tp.list)-1]
	}
	buf = append(buf[:0], assign...)
	i := sort.Search(len(tp.list), func(i int) bool { return tp.list[i].score > score })
	tp.list = slices.Insert(tp.list, i, candidate{score: score, class: class, assign: buf})
}

// samePartition reports whether two assignments split the items the same way: equal
// labels, or with sym, equal up to renaming the teams.
func samePartition(a, b []uint8, sym bool) bool {
	if !sym {
		return slices.Equal(a, b)
	}
	var ab, ba [MaxTeams]int8
	for i := range ab {
		ab[i], ba[i] = -1, -1
	}
	for i := range a {
		x, y := a[i], b[i]
		switch {
		case ab[x] == -1 && ba[y] == -1:
			ab[x], ba[y] = int8(y), int8(x)
		case ab[x] != int8(y):
			return false
		}
	}
	return true
}

// problem is the engine's input.
type problem struct {
	w       []float64 // item weights
	t       int       // teams
	obj     Objective
	sym     bool // teams with equal caps and bases are interchangeable (a split)
	classes []class
	tol     float64   // rounding of a score: the searches skip what cannot beat the k-th by more
	total   float64   // sum of w
	desc    []int     // items, heaviest first
	pre     []float64 // pre[k] = sum of the k heaviest items

	intBuf   []int // backing of the classes' caps and bots
	floatBuf []float64
}

func newProblem(w []float64, t int, obj Objective, sym bool) *problem {
	p := &problem{w: w, t: t, obj: obj, sym: sym}
	p.desc = make([]int, len(w))
	for i := range p.desc {
		p.desc[i] = i
	}
	sort.SliceStable(p.desc, func(a, b int) bool { return w[p.desc[a]] > w[p.desc[b]] })
	p.pre = make([]float64, len(w)+1)
	for k, i := range p.desc {
		p.pre[k+1] = p.pre[k] + w[i]
	}
	p.total = p.pre[len(w)]
	return p
}

// addClass registers a class (copying caps, bots and base into shared buffers: a large split
// may have many classes) and computes its bound: every team ends between its base plus its
// caps[j] lightest items and its base plus its caps[j] heaviest, and the mean total lies
// between the smallest and the largest.
func (p *problem) addClass(caps, bots []int, base []float64) {
	u := len(p.w)
	s := p.total
	for _, b := range base {
		s += b
	}
	avg := s / float64(p.t)
	lbMax, ubMin := avg, avg
	for j, c := range caps {
		lbMax = max(lbMax, base[j]+p.pre[u]-p.pre[u-c])
		ubMin = min(ubMin, base[j]+p.pre[c])
	}
	lb := 0.0
	if ubMin < lbMax {
		lb = scoreRange(p.obj, ubMin, lbMax)
	}
	if p.obj == Ratio {
		p.tol = roundingOfScores
	} else {
		p.tol = max(p.tol, roundingOfScores*max(1, s))
	}
	n := len(p.intBuf)
	p.intBuf = append(p.intBuf, caps...)
	c := p.intBuf[n:len(p.intBuf):len(p.intBuf)]
	var b []int
	if bots != nil {
		n = len(p.intBuf)
		p.intBuf = append(p.intBuf, bots...)
		b = p.intBuf[n:len(p.intBuf):len(p.intBuf)]
	}
	n = len(p.floatBuf)
	p.floatBuf = append(p.floatBuf, base...)
	p.classes = append(p.classes, class{caps: c, bots: b, base: p.floatBuf[n:len(p.floatBuf):len(p.floatBuf)],
		lb: lb, spread: slices.Max(caps) - slices.Min(caps)})
}

// roundingOfScores bounds, with a wide margin, how far a score computed from sums in one
// order can be from the same score computed in another, relative to the sum of the team
// totals (the ratio objective is already relative): each of at most MaxHumans+MaxBots
// weights adds at most one rounding of 2^-53 of the total.
const roundingOfScores = 1e-12

// open reports whether a part of the search whose every split scores at least bound can
// still give top a candidate: while top is not full, always; then only if bound is below the
// k-th score by more than p.tol. A split that would only tie the k-th, or beat it by a
// rounding error, is not worth finding: a tie does not enter, and which of two splits a
// rounding error prefers is arbitrary. Skipping those is what keeps ties cheap: whole-number
// weights make thousands of equally good splits, and a search that looked at every one of
// them took seconds.
func (p *problem) open(top *shortlist, bound float64) bool {
	return len(top.list) < top.k || bound < top.list[len(top.list)-1].score-p.tol
}

// classOrder lists the classes most promising first (smallest bound, then the most even
// head counts), so good candidates are found early and prune the rest.
func (p *problem) classOrder() []int {
	order := make([]int, len(p.classes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ca, cb := &p.classes[a], &p.classes[b]
		if c := cmp.Compare(ca.lb, cb.lb); c != 0 {
			return c
		}
		if c := cmp.Compare(ca.spread, cb.spread); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

// totals returns base + item sums of an assignment.
func (p *problem) totals(cl *class, assign []uint8, out []float64) []float64 {
	out = append(out[:0], cl.base...)
	for i, j := range assign {
		out[j] += p.w[i]
	}
	return out
}
