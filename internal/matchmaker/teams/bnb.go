package teams

// Three or four teams (or any count), exact: branch and bound.
//
// Items are placed heaviest first, each tried on the teams in order of their current total
// (lightest first, so good splits come early). A node is cut when even the best completion
// cannot beat the k-th candidate by more than rounding (problem.open): every team will end
// between its total plus its lightest possible remaining items and its total plus its
// heaviest, and the mean total is fixed. A node that can at best tie is cut too: with equal
// weights every node ties, and the search used to visit them all until the budget ran out.
// With sym an item is never put in an empty team when an identical empty team comes before
// it, so each partition is visited once. The search gives up after budget nodes.

type branchBound struct {
	p       *problem
	top     *shortlist
	ci      int
	cl      *class
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
func (p *problem) bnb(top *shortlist, budget int) bool {
	u := len(p.w)
	b := &branchBound{p: p, top: top, budget: budget}
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
		if !p.open(top, cl.lb) {
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

func (b *branchBound) rec(idx int) {
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
	withRoom, last := 0, 0
	for j := range t {
		free := b.cl.caps[j] - b.cnt[j]
		lbMax = max(lbMax, b.sums[j]+b.pre[u]-b.pre[u-free])
		ubMin = min(ubMin, b.sums[j]+b.pre[idx+free]-b.pre[idx])
		if free > 0 {
			withRoom++
			last = j
		}
	}
	bound := 0.0 // no score is negative
	if ubMin < lbMax {
		bound = scoreRange(b.p.obj, ubMin, lbMax)
	}
	if !b.p.open(b.top, bound) {
		return
	}
	if withRoom == 1 { // the rest is forced
		old := b.sums[last]
		for k := idx; k < u; k++ {
			b.assign[k] = uint8(last)
			b.sums[last] += b.w[k]
		}
		b.leaf()
		b.sums[last] = old
		return
	}
	var order [MaxTeams]int
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

func (b *branchBound) leaf() {
	lo, hi := b.sums[0], b.sums[0]
	for _, s := range b.sums[1:b.p.t] {
		lo, hi = min(lo, s), max(hi, s)
	}
	if !b.top.accepts(scoreRange(b.p.obj, lo, hi)) {
		return
	}
	for k, i := range b.p.desc {
		b.out[i] = b.assign[k]
	}
	var buf [MaxTeams]float64
	sc := scoreOf(b.p.obj, b.p.totals(b.cl, b.out, buf[:0]))
	if b.top.accepts(sc) {
		b.top.insert(sc, b.ci, b.out)
	}
}
