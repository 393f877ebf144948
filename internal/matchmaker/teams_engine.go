package matchmaker

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
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

// teamClass is one head-count vector with the fixed part of each team's total.
type teamClass struct {
	caps   []int     // items each team receives
	bots   []int     // bots each team gets (a split only)
	base   []float64 // total each team holds before any item joins
	lb     float64   // lower bound of the score of any assignment in the class
	spread int       // largest cap - smallest
}

// teamCand is one assignment: the team of every item, and its score (lower is better).
type teamCand struct {
	score  float64
	class  int
	assign []uint8
}

// teamTop keeps the best k distinct candidates, best first. A candidate enters only if it
// is strictly better than the worst kept one, so among equal scores the first found stays.
type teamTop struct {
	k      int
	sym    bool // teams are interchangeable: candidates are compared as partitions
	dedupe bool // check new candidates against kept ones (heuristics may repeat a partition)
	list   []teamCand
}

func (tp *teamTop) accepts(score float64) bool {
	return len(tp.list) < tp.k || score < tp.list[len(tp.list)-1].score
}

// insert adds a copy of assign; the caller has checked accepts.
func (tp *teamTop) insert(score float64, class int, assign []uint8) {
	if tp.dedupe {
		for _, c := range tp.list {
			if c.class == class && teamSamePartition(c.assign, assign, tp.sym) {
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
	tp.list = slices.Insert(tp.list, i, teamCand{score: score, class: class, assign: buf})
}

// teamSamePartition reports whether two assignments split the items the same way: equal
// labels, or with sym, equal up to renaming the teams.
func teamSamePartition(a, b []uint8, sym bool) bool {
	if !sym {
		return slices.Equal(a, b)
	}
	var ab, ba [TeamMaxTeams]int8
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

// teamProblem is the engine's input.
type teamProblem struct {
	w       []float64 // item weights
	t       int       // teams
	obj     SplitObjective
	sym     bool // teams with equal caps and bases are interchangeable (a split)
	classes []teamClass
	total   float64   // sum of w
	desc    []int     // items, heaviest first
	pre     []float64 // pre[k] = sum of the k heaviest items

	intBuf   []int // backing of the classes' caps and bots
	floatBuf []float64
}

func newTeamProblem(w []float64, t int, obj SplitObjective, sym bool) *teamProblem {
	p := &teamProblem{w: w, t: t, obj: obj, sym: sym}
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
func (p *teamProblem) addClass(caps, bots []int, base []float64) {
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
		lb = teamBoundSlack(p.obj, teamScore(p.obj, ubMin, lbMax), s)
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
	p.classes = append(p.classes, teamClass{caps: c, bots: b, base: p.floatBuf[n:len(p.floatBuf):len(p.floatBuf)],
		lb: lb, spread: slices.Max(caps) - slices.Min(caps)})
}

// teamBoundSlack lowers a bound by far more than the rounding of the sums behind it (they
// are added in another order than the totals they bound), so a search never discards a
// candidate that is better by a rounding error. total is the sum of all team totals.
func teamBoundSlack(obj SplitObjective, lb, total float64) float64 {
	if obj == SplitRatio {
		return lb - 1e-12
	}
	return lb - 1e-12*total
}

// classOrder lists the classes most promising first (smallest bound, then the most even
// head counts), so good candidates are found early and prune the rest.
func (p *teamProblem) classOrder() []int {
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
func (p *teamProblem) totals(cl *teamClass, assign []uint8, out []float64) []float64 {
	out = append(out[:0], cl.base...)
	for i, j := range assign {
		out[j] += p.w[i]
	}
	return out
}

// ---------------------------------------------------------------------------------------
// Two teams, exact: meet in the middle.
//
// The items are cut in two halves; the subset sums of each half are listed by head count,
// each list sorted (built by merging, O(2^h) for a half of h items, no sort). For a class
// where team A receives c items, a left subset with i items pairs with a right one with
// c-i; within the class both objectives only depend on |total_A - total_B| (the sum of the
// two totals is fixed), so the best pairs are those whose sum is nearest the target
// (W + base_B - base_A)/2. Walking the left list up and the right list down with two
// pointers finds, for every left subset, the nearest right ones: about 2^(u/2) steps per
// class instead of 2^(u-1). With sym, item 0 is fixed in team A, so each split is seen once.

// teamSubsets holds the subset sums of one half: list c is sums[off[c]:off[c+1]].
type teamSubsets struct {
	sums  []float64
	masks []uint32
	off   []int
	tmpS  []float64
	tmpM  []uint32
}

var teamSubsetsPool = sync.Pool{New: func() any { return new(teamSubsets) }}

// build lists the subsets of ws by size, each list sorted by sum; with forceFirst only
// subsets holding ws[0].
func (s *teamSubsets) build(ws []float64, forceFirst bool) {
	n := len(ws)
	size := 1 << n
	if forceFirst && n > 0 {
		size >>= 1
	}
	s.sums, s.tmpS = teamGrow(s.sums, size), teamGrow(s.tmpS, size)
	s.masks, s.tmpM = teamGrowU(s.masks, size), teamGrowU(s.tmpM, size)
	s.off = append(s.off[:0], make([]int, n+2)...)
	// cnt[c] is the length of list c; the lists lie one after the other by c.
	var cnt [32]int
	start := 0
	if forceFirst && n > 0 {
		s.sums[0], s.masks[0], cnt[1], start = ws[0], 1, 1, 1
	} else {
		s.sums[0], s.masks[0], cnt[0] = 0, 0, 1
	}
	sums, masks, nsums, nmasks := s.sums, s.masks, s.tmpS, s.tmpM
	for k := start; k < n; k++ {
		x, bit := ws[k], uint32(1)<<k
		var ncnt [32]int
		src, dst := 0, 0 // start of old list c-1, write position
		oldStart := 0    // start of old list c
		for c := 0; c <= k+1; c++ {
			// merge old list c with old list c-1 shifted by x
			a, aEnd := oldStart, oldStart+cnt[c]
			b, bEnd := src, src+0
			if c > 0 {
				bEnd = src + cnt[c-1]
			}
			w0 := dst
			for a < aEnd && b < bEnd {
				if sb := sums[b] + x; sums[a] <= sb {
					nsums[dst], nmasks[dst] = sums[a], masks[a]
					a++
				} else {
					nsums[dst], nmasks[dst] = sb, masks[b]|bit
					b++
				}
				dst++
			}
			for ; a < aEnd; a++ {
				nsums[dst], nmasks[dst] = sums[a], masks[a]
				dst++
			}
			for ; b < bEnd; b++ {
				nsums[dst], nmasks[dst] = sums[b]+x, masks[b]|bit
				dst++
			}
			ncnt[c] = dst - w0
			if c > 0 {
				src += cnt[c-1]
			}
			oldStart += cnt[c]
		}
		cnt = ncnt
		sums, masks, nsums, nmasks = nsums, nmasks, sums, masks
	}
	s.sums, s.masks, s.tmpS, s.tmpM = sums, masks, nsums, nmasks
	for c := 0; c <= n; c++ {
		s.off[c+1] = s.off[c] + cnt[c]
	}
}

func teamGrow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

func teamGrowU(b []uint32, n int) []uint32 {
	if cap(b) < n {
		return make([]uint32, n)
	}
	return b[:n]
}

// teamMITMMax is the largest problem meet in the middle is used for: 40 items make halves of
// 2^19 and 2^20 subset sums, 12 bytes each, twice (the merge ping-pongs): 38 MB of scratch,
// pooled between calls. The callers' limits (SplitExactLimit2, RebalanceExactLimit2,
// teamResplitMax) stay within it.
const teamMITMMax = 40

func (p *teamProblem) mitm(top *teamTop) {
	u := len(p.w)
	if u > teamMITMMax {
		panic("matchmaker: meet in the middle on more than teamMITMMax items")
	}
	fix := p.sym && u > 0
	hl := u / 2
	if fix {
		hl = (u + 1) / 2
	}
	L := teamSubsetsPool.Get().(*teamSubsets)
	R := teamSubsetsPool.Get().(*teamSubsets)
	defer teamSubsetsPool.Put(L)
	defer teamSubsetsPool.Put(R)
	L.build(p.w[:hl], fix)
	R.build(p.w[hl:], false)
	nR := u - hl
	scratch := make([]uint8, u)
	for _, ci := range p.classOrder() {
		cl := &p.classes[ci]
		if !top.accepts(cl.lb) {
			continue
		}
		for o := 0; o < 2; o++ {
			a, b := 0, 1
			if o == 1 {
				if !fix || cl.caps[0] == cl.caps[1] {
					break
				}
				a, b = 1, 0
			}
			p.mitmClass(top, ci, a, b, L, R, hl, nR, scratch)
		}
	}
}

// mitmClass searches one class with item 0's team (when fixed) being team a. Within the
// class the score only grows with |sum_A - target|, so the k-th best score kept is turned
// into a window around the target (a little wider, for rounding; mitmInsert scores exactly)
// and the walks stop at its edges.
func (p *teamProblem) mitmClass(top *teamTop, ci, a, b int, L, R *teamSubsets, hl, nR int, scratch []uint8) {
	cl := &p.classes[ci]
	cA := cl.caps[a]
	total := p.total + cl.base[a] + cl.base[b]
	target := (p.total + cl.base[b] - cl.base[a]) / 2
	window := func() float64 {
		if len(top.list) < top.k {
			return math.Inf(1)
		}
		d := top.list[len(top.list)-1].score // largest |total_A - total_B| that may enter
		if p.obj == SplitRatio {
			if d >= 1 {
				return math.Inf(1)
			}
			d = d * total / (2 - d) // score = |d| / max = 2|d| / (total + |d|)
		}
		return d/2*(1+1e-9) + 1e-12*(1+total)
	}
	win := window()
	for i := max(0, cA-nR); i <= min(cA, hl); i++ {
		j := cA - i
		l0, l1 := L.off[i], L.off[i+1]
		r0, r1 := R.off[j], R.off[j+1]
		if l0 == l1 || r0 == r1 {
			continue
		}
		ls, rs := L.sums, R.sums
		if ls[l1-1]+rs[r1-1] < target-win || ls[l0]+rs[r0] > target+win {
			continue // no pair of these lists comes near the target
		}
		q := r1
		for x := l0; x < l1; x++ {
			lx := ls[x]
			tr := target - lx
			for q > r0 && rs[q-1] >= tr {
				q--
			}
			for y := q; y < r1 && lx+rs[y]-target <= win; y++ {
				if p.mitmInsert(top, ci, a, b, L.masks[x], R.masks[y], hl, scratch) {
					win = window()
				}
			}
			for y := q - 1; y >= r0 && target-(lx+rs[y]) <= win; y-- {
				if p.mitmInsert(top, ci, a, b, L.masks[x], R.masks[y], hl, scratch) {
					win = window()
				}
			}
		}
	}
}

// mitmInsert scores the pair of subsets (ml of the left half, mr of the right in team a)
// and keeps it if it is good enough; it reports whether it was kept.
func (p *teamProblem) mitmInsert(top *teamTop, ci, a, b int, ml, mr uint32, hl int, scratch []uint8) bool {
	for k := range scratch {
		in := false
		if k < hl {
			in = ml>>k&1 == 1
		} else {
			in = mr>>(k-hl)&1 == 1
		}
		if in {
			scratch[k] = uint8(a)
		} else {
			scratch[k] = uint8(b)
		}
	}
	// Score from the assignment, so every candidate's score is computed the same way
	// whatever found it.
	cl := &p.classes[ci]
	var buf [TeamMaxTeams]float64
	sc := teamScoreOf(p.obj, p.totals(cl, scratch, buf[:0]))
	if !top.accepts(sc) {
		return false
	}
	top.insert(sc, ci, scratch)
	return true
}

// ---------------------------------------------------------------------------------------
// Three or four teams (or any count), exact: branch and bound.
//
// Items are placed heaviest first, each tried on the teams in order of their current total
// (lightest first, so good splits come early). A node is cut when even the best completion
// cannot beat the k-th candidate: every team will end between its total plus its lightest
// possible remaining items and its total plus its heaviest, and the mean total is fixed.
// With sym an item is never put in an empty team when an identical empty team comes before
// it, so each partition is visited once. The search gives up after budget nodes.

type teamBnB struct {
	p       *teamProblem
	top     *teamTop
	ci      int
	cl      *teamClass
	w       []float64 // items heaviest first
	pre     []float64
	sums    []float64
	cnt     []int
	assign  []uint8 // by position in w
	out     []uint8 // by item
	eqPrev  [][]int // for team j, the earlier teams with the same cap and base
	avg     float64
	nodes   int
	budget  int
	aborted bool
}

// bnb searches every class; it reports false when the node budget ran out.
func (p *teamProblem) bnb(top *teamTop, budget int) bool {
	u := len(p.w)
	b := &teamBnB{p: p, top: top, budget: budget}
	b.w = make([]float64, u)
	for k, i := range p.desc {
		b.w[k] = p.w[i]
	}
	b.pre = p.pre
	b.sums = make([]float64, p.t)
	b.cnt = make([]int, p.t)
	b.assign = make([]uint8, u)
	b.out = make([]uint8, u)
	for _, ci := range p.classOrder() {
		cl := &p.classes[ci]
		if !top.accepts(cl.lb) {
			continue
		}
		b.ci, b.cl = ci, cl
		s := p.total
		for j := range p.t {
			b.sums[j] = cl.base[j]
			b.cnt[j] = 0
			s += cl.base[j]
		}
		b.avg = s / float64(p.t)
		b.eqPrev = b.eqPrev[:0]
		for j := range p.t {
			var eq []int
			if p.sym {
				for k := range j {
					if cl.caps[k] == cl.caps[j] && cl.base[k] == cl.base[j] {
						eq = append(eq, k)
					}
				}
			}
			b.eqPrev = append(b.eqPrev, eq)
		}
		b.rec(0)
		if b.aborted {
			return false
		}
	}
	return true
}

func (b *teamBnB) rec(idx int) {
	b.nodes++
	if b.nodes > b.budget {
		b.aborted = true
		return
	}
	t, u := b.p.t, len(b.w)
	if idx == u {
		b.leaf()
		return
	}
	// Bound.
	lbMax, ubMin := b.avg, b.avg
	open, last := 0, 0
	for j := range t {
		free := b.cl.caps[j] - b.cnt[j]
		lbMax = max(lbMax, b.sums[j]+b.pre[u]-b.pre[u-free])
		ubMin = min(ubMin, b.sums[j]+b.pre[idx+free]-b.pre[idx])
		if free > 0 {
			open++
			last = j
		}
	}
	if ubMin < lbMax && !b.top.accepts(teamBoundSlack(b.p.obj, teamScore(b.p.obj, ubMin, lbMax), b.avg*float64(t))) {
		return
	}
	if open == 1 { // the rest is forced
		old := b.sums[last]
		for k := idx; k < u; k++ {
			b.assign[k] = uint8(last)
			b.sums[last] += b.w[k]
		}
		b.leaf()
		b.sums[last] = old
		return
	}
	var order [TeamMaxTeams]int
	for j := range t {
		order[j] = j
	}
	for i := 1; i < t; i++ { // insertion sort by current total
		for k := i; k > 0 && b.sums[order[k]] < b.sums[order[k-1]]; k-- {
			order[k], order[k-1] = order[k-1], order[k]
		}
	}
	x := b.w[idx]
next:
	for _, j := range order[:t] {
		if b.cnt[j] == b.cl.caps[j] {
			continue
		}
		if b.cnt[j] == 0 {
			for _, k := range b.eqPrev[j] {
				if b.cnt[k] == 0 {
					continue next
				}
			}
		}
		old := b.sums[j]
		b.sums[j] += x
		b.cnt[j]++
		b.assign[idx] = uint8(j)
		b.rec(idx + 1)
		b.sums[j] = old
		b.cnt[j]--
		if b.aborted {
			return
		}
	}
}

func (b *teamBnB) leaf() {
	lo, hi := b.sums[0], b.sums[0]
	for _, s := range b.sums[1:b.p.t] {
		lo, hi = min(lo, s), max(hi, s)
	}
	if !b.top.accepts(teamScore(b.p.obj, lo, hi)) {
		return
	}
	for k, i := range b.p.desc {
		b.out[i] = b.assign[k]
	}
	var buf [TeamMaxTeams]float64
	sc := teamScoreOf(b.p.obj, b.p.totals(b.cl, b.out, buf[:0]))
	if b.top.accepts(sc) {
		b.top.insert(sc, b.ci, b.out)
	}
}

// ---------------------------------------------------------------------------------------
// Any size, heuristic. Per class, a greedy start (heaviest item to the lightest team that
// has room, the LPT rule) and then local search by swaps, which keep the head counts. Every
// class (at most teamHeuristicClasses, the best bounded) is screened with the best 1-for-1
// swap between any two teams until none helps; the teamPolishClasses best are polished with
// 2-for-2 swaps too and, for 3-4 teams, exact re-splits of two teams (resplitPair) and a few
// random kicks (kick). For two teams i and j, moving delta = (sum moved into i) - (sum moved
// out) is best at delta* = (T_j - T_i)/2 for both objectives (the larger of the two new
// totals is smallest and the smaller largest there, whatever the other teams hold), and the
// score only worsens moving away from it, so for each outgoing item (or pair) only the
// incoming ones nearest the target need scoring: sort and binary search, O(n log n) for
// singles and O(n^2 log n) for pairs (of at most teamPairMax players a team). Ties in the
// score are broken by the sum of squared totals, so swaps that even out the teams between
// the largest and the smallest count as progress. The local optima and their best 1-for-1
// neighbours become the candidates. Everything is deterministic: the same input gives the
// same split.

func (p *teamProblem) heuristic(top *teamTop) {
	// Screen every class with the greedy start and 1-for-1 swaps, then polish the most
	// promising few with the costlier moves: with bots a large split has a dozen or more
	// classes, and the best after screening is nearly always the best after polishing.
	var runs []*teamLocalSearch
	for k, ci := range p.classOrder() {
		if k == teamHeuristicClasses {
			break
		}
		if !top.accepts(p.classes[ci].lb) {
			continue
		}
		ls := p.newLocalSearch(ci)
		ls.run(false)
		runs = append(runs, ls)
	}
	slices.SortStableFunc(runs, func(a, b *teamLocalSearch) int {
		return cmp.Compare(teamScoreOf(p.obj, a.sums), teamScoreOf(p.obj, b.sums))
	})
	for i, ls := range runs {
		if i < teamPolishClasses {
			ls.run(true)
			if p.t > 2 && i < 2 {
				ls.kick(i)
			}
		}
		ls.offer(top)
	}
}

// kick is iterated local search for 3-4 teams, whose swap optima are coarser: shake the
// assignment with a few random swaps, polish again, keep the result if it is better, a
// number of times that shrinks to none at 48 players (each polish costs more, and large
// splits have so many near-equal sums that the swaps alone come within a millionth). The
// random source has a fixed seed: the same players give the same split.
func (ls *teamLocalSearch) kick(salt int) {
	u := len(ls.p.w)
	rounds := min(12, max(0, (48-u)/2))
	rng := rand.New(rand.NewPCG(uint64(u), uint64(salt)))
	best := teamScoreOf(ls.p.obj, ls.sums)
	bestAssign := slices.Clone(ls.assign)
	for range rounds {
		for range 1 + u/8 {
			i, j := rng.IntN(ls.p.t), rng.IntN(ls.p.t)
			if i == j || len(ls.members[i]) == 0 || len(ls.members[j]) == 0 {
				continue
			}
			ls.swap(i, j, ls.members[i][rng.IntN(len(ls.members[i]))], ls.members[j][rng.IntN(len(ls.members[j]))])
		}
		ls.run(true)
		if sc := teamScoreOf(ls.p.obj, ls.sums); sc < best {
			best = sc
			copy(bestAssign, ls.assign)
		} else {
			ls.reset(bestAssign)
		}
	}
}

// reset makes assign the current assignment.
func (ls *teamLocalSearch) reset(assign []uint8) {
	copy(ls.assign, assign)
	copy(ls.sums, ls.cl.base)
	for j := range ls.members {
		ls.members[j] = ls.members[j][:0]
	}
	clear(ls.pairsOK)
	for i, j := range assign {
		ls.members[j] = append(ls.members[j], i)
		ls.sums[j] += ls.p.w[i]
	}
}

// teamPolishClasses is how many classes the heuristic polishes after screening, and
// teamHeuristicClasses how many it screens at most: those with the best bounds (classOrder).
// Without a cap, 4 teams of 256 humans with bots have 123,464 head-count vectors; most put
// nearly everyone on one team.
const (
	teamPolishClasses    = 4
	teamHeuristicClasses = 48
)

type teamLocalSearch struct {
	p         *teamProblem
	ci        int
	cl        *teamClass
	assign    []uint8
	sums      []float64
	members   [][]int
	eps       float64 // improvements smaller than these are rounding
	spreadEps float64
	sorted    []int        // scratch: members of a team by weight
	pairs     [][]teamPair // per team, its pairs by sum (pairsOf), valid while pairsOK
	pairsOK   []bool
}

type teamPair struct {
	sum  float64
	a, b int
}

func (p *teamProblem) newLocalSearch(ci int) *teamLocalSearch {
	cl := &p.classes[ci]
	ls := &teamLocalSearch{p: p, ci: ci, cl: cl}
	ls.assign = make([]uint8, len(p.w))
	ls.sums = slices.Clone(cl.base)
	ls.members = make([][]int, p.t)
	cnt := make([]int, p.t)
	for _, i := range p.desc {
		best := -1
		for j := range p.t {
			if cnt[j] < cl.caps[j] && (best < 0 || ls.sums[j] < ls.sums[best]) {
				best = j
			}
		}
		ls.assign[i] = uint8(best)
		ls.sums[best] += p.w[i]
		cnt[best]++
		ls.members[best] = append(ls.members[best], i)
	}
	s := p.total
	for _, b := range cl.base {
		s += b
	}
	ls.eps = 1e-12
	if p.obj != SplitRatio {
		ls.eps *= max(1, s)
	}
	ls.spreadEps = 1e-12 * max(1, s*s)
	return ls
}

// teamMoveCost ranks a swap: first the score after it, then, to cross plateaus where
// several teams share the largest or the smallest total, the change in the sum of squared
// totals (a swap that keeps max - min but evens the others out is progress).
type teamMoveCost struct{ score, spread float64 }

func (c teamMoveCost) better(d teamMoveCost, eps, spreadEps float64) bool {
	if c.score != d.score && (c.score < d.score-eps || c.score > d.score+eps) {
		return c.score < d.score
	}
	return c.spread < d.spread-spreadEps
}

// cost is the cost after delta moves into team i out of team j.
func (ls *teamLocalSearch) cost(i, j int, delta float64) teamMoveCost {
	ti, tj := ls.sums[i]+delta, ls.sums[j]-delta
	lo, hi := min(ti, tj), max(ti, tj)
	for k, s := range ls.sums {
		if k != i && k != j {
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	return teamMoveCost{teamScore(ls.p.obj, lo, hi), 2 * delta * (ls.sums[i] - ls.sums[j] + delta)}
}

// run improves the assignment until no move helps: 1-for-1 swaps, and with polish 2-for-2
// swaps and (3-4 teams) exact re-splits of two teams.
func (ls *teamLocalSearch) run(polish bool) {
	u := len(ls.p.w)
	for iter := 0; iter < 4*u+64; iter++ {
		cur := teamMoveCost{teamScoreOf(ls.p.obj, ls.sums), 0}
		if ok, i, j, a, b, c := ls.bestSingle(); ok && c.better(cur, ls.eps, ls.spreadEps) {
			ls.swap(i, j, a, b)
			continue
		}
		if !polish {
			return
		}
		if ok, i, j, pa, pb, c := ls.bestDouble(); ok && c.better(cur, ls.eps, ls.spreadEps) {
			ls.swap(i, j, pa.a, pb.a)
			ls.swap(i, j, pa.b, pb.b)
			continue
		}
		if ls.p.t > 2 && ls.resplitPair(cur) {
			continue
		}
		return
	}
}

// teamResplitMax is the largest union of two teams resplitPair solves exactly.
const teamResplitMax = 24

// resplitPair re-splits the players of two teams exactly (meet in the middle on their
// union, same head counts), which is the best those two teams can do whatever the others
// hold; it applies the best such re-split over all pairs if it helps. Only for 3-4 teams:
// for two teams it would be the exact search itself.
func (ls *teamLocalSearch) resplitPair(cur teamMoveCost) bool {
	best, bi, bj := cur, -1, -1
	var union, bestUnion []int
	var bestAssign []uint8
	for i := range ls.p.t {
		for j := i + 1; j < ls.p.t; j++ {
			mi, mj := ls.members[i], ls.members[j]
			if len(mi)+len(mj) > teamResplitMax || len(mi)+len(mj) < 2 {
				continue
			}
			union = append(append(union[:0], mi...), mj...)
			ws := make([]float64, len(union))
			for k, it := range union {
				ws[k] = ls.p.w[it]
			}
			sub := newTeamProblem(ws, 2, SplitDifference, false)
			sub.addClass([]int{len(mi), len(mj)}, nil, []float64{ls.cl.base[i], ls.cl.base[j]})
			top := &teamTop{k: 1}
			sub.mitm(top)
			var buf [2]float64
			ti := sub.totals(&sub.classes[0], top.list[0].assign, buf[:0])[0]
			if c := ls.cost(i, j, ti-ls.sums[i]); c.better(best, ls.eps, ls.spreadEps) {
				best, bi, bj = c, i, j
				bestUnion = append(bestUnion[:0], union...)
				bestAssign = append(bestAssign[:0], top.list[0].assign...)
			}
		}
	}
	if bi < 0 {
		return false
	}
	ls.members[bi], ls.members[bj] = ls.members[bi][:0], ls.members[bj][:0]
	if ls.pairsOK != nil {
		ls.pairsOK[bi], ls.pairsOK[bj] = false, false
	}
	ls.sums[bi], ls.sums[bj] = ls.cl.base[bi], ls.cl.base[bj]
	for k, it := range bestUnion {
		team := bj
		if bestAssign[k] == 0 {
			team = bi
		}
		ls.assign[it] = uint8(team)
		ls.members[team] = append(ls.members[team], it)
		ls.sums[team] += ls.p.w[it]
	}
	return true
}

// swap moves item a from team i to j and item b from j to i.
func (ls *teamLocalSearch) swap(i, j, a, b int) {
	w := ls.p.w
	ls.sums[i] += w[b] - w[a]
	ls.sums[j] += w[a] - w[b]
	ls.assign[a], ls.assign[b] = uint8(j), uint8(i)
	ls.members[i][slices.Index(ls.members[i], a)] = b
	ls.members[j][slices.Index(ls.members[j], b)] = a
	if ls.pairsOK != nil {
		ls.pairsOK[i], ls.pairsOK[j] = false, false
	}
}

// bestSingle finds the best 1-for-1 swap (a out of i, b out of j).
func (ls *teamLocalSearch) bestSingle() (ok bool, bi, bj, ba, bb int, best teamMoveCost) {
	w := ls.p.w
	best = teamMoveCost{math.Inf(1), 0}
	for i := range ls.p.t {
		for j := i + 1; j < ls.p.t; j++ {
			if len(ls.members[i]) == 0 || len(ls.members[j]) == 0 {
				continue
			}
			sj := append(ls.sorted[:0], ls.members[j]...)
			sort.Slice(sj, func(x, y int) bool { return w[sj[x]] < w[sj[y]] })
			ls.sorted = sj
			half := (ls.sums[j] - ls.sums[i]) / 2
			for _, a := range ls.members[i] {
				target := w[a] + half // want w[b] near this
				k := sort.Search(len(sj), func(k int) bool { return w[sj[k]] >= target })
				for _, kk := range [2]int{k - 1, k} {
					if kk < 0 || kk >= len(sj) {
						continue
					}
					b := sj[kk]
					if c := ls.cost(i, j, w[b]-w[a]); c.better(best, 0, 0) {
						best, ok, bi, bj, ba, bb = c, true, i, j, a, b
					}
				}
			}
		}
	}
	return ok, bi, bj, ba, bb, best
}

// bestDouble finds the best 2-for-2 swap (pair pa out of i, pair pb out of j).
func (ls *teamLocalSearch) bestDouble() (ok bool, bi, bj int, bpa, bpb teamPair, best teamMoveCost) {
	best = teamMoveCost{math.Inf(1), 0}
	for i := range ls.p.t {
		for j := i + 1; j < ls.p.t; j++ {
			if len(ls.members[i]) < 2 || len(ls.members[j]) < 2 {
				continue
			}
			pi, pj := ls.pairsOf(i), ls.pairsOf(j)
			half := (ls.sums[j] - ls.sums[i]) / 2
			k := 0
			for _, pa := range pi { // ascending, so the target ascends too
				target := pa.sum + half
				for k < len(pj) && pj[k].sum < target {
					k++
				}
				for _, kk := range [2]int{k - 1, k} {
					if kk < 0 || kk >= len(pj) {
						continue
					}
					if c := ls.cost(i, j, pj[kk].sum-pa.sum); c.better(best, 0, 0) {
						best, ok, bi, bj, bpa, bpb = c, true, i, j, pa, pj[kk]
					}
				}
			}
		}
	}
	return ok, bi, bj, bpa, bpb, best
}

// teamPairMax bounds the players of a team whose pairs bestDouble tries: 32 give 496 pairs
// a team, about 250,000 pair differences between two teams, plenty to find one near the
// target; all pairs of 128 players would cost milliseconds a step for nothing.
const teamPairMax = 32

// pairsOf returns the pairs of team j's players (of its first teamPairMax), sorted by sum;
// the list is kept until a move changes the team.
func (ls *teamLocalSearch) pairsOf(j int) []teamPair {
	if ls.pairs == nil {
		ls.pairs = make([][]teamPair, ls.p.t)
		ls.pairsOK = make([]bool, ls.p.t)
	}
	if ls.pairsOK[j] {
		return ls.pairs[j]
	}
	w := ls.p.w
	m := ls.members[j][:min(len(ls.members[j]), teamPairMax)]
	out := ls.pairs[j][:0]
	for x := range m {
		for y := x + 1; y < len(m); y++ {
			out = append(out, teamPair{w[m[x]] + w[m[y]], m[x], m[y]})
		}
	}
	slices.SortFunc(out, func(a, b teamPair) int { return cmp.Compare(a.sum, b.sum) })
	ls.pairs[j], ls.pairsOK[j] = out, true
	return out
}

// offer gives the local optimum and its 1-for-1 neighbours to top.
func (ls *teamLocalSearch) offer(top *teamTop) {
	p := ls.p
	var buf [TeamMaxTeams]float64
	sums := p.totals(ls.cl, ls.assign, buf[:0])
	if sc := teamScoreOf(p.obj, sums); top.accepts(sc) {
		top.insert(sc, ls.ci, ls.assign)
	}
	copy(ls.sums, sums)
	for i := range p.t {
		for j := i + 1; j < p.t; j++ {
			for _, a := range ls.members[i] {
				for _, b := range ls.members[j] {
					if !top.accepts(ls.cost(i, j, p.w[b]-p.w[a]).score) {
						continue
					}
					ls.assign[a], ls.assign[b] = uint8(j), uint8(i)
					sc := teamScoreOf(p.obj, p.totals(ls.cl, ls.assign, buf[:0]))
					if top.accepts(sc) {
						top.insert(sc, ls.ci, ls.assign)
					}
					ls.assign[a], ls.assign[b] = uint8(i), uint8(j)
				}
			}
		}
	}
}
