package teams

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Any size, heuristic. Per class, a greedy start (heaviest item to the lightest team that
// has room, the LPT rule) and then local search by swaps, which keep the head counts. Every
// class (at most heuristicClasses, the best bounded) is screened with the best 1-for-1
// swap between any two teams until none helps; the polishClasses best are polished with
// 2-for-2 swaps too and, for 3-4 teams, exact re-splits of two teams (resplitPair) and a few
// random kicks (kick). For two teams i and j, moving delta = (sum moved into i) - (sum moved
// out) is best at delta* = (T_j - T_i)/2 for both objectives (the larger of the two new
// totals is smallest and the smaller largest there, whatever the other teams hold), and the
// score only worsens moving away from it, so for each outgoing item (or pair) only the
// incoming ones nearest the target need scoring: sort and binary search, O(n log n) for
// singles and O(n^2 log n) for pairs (of at most pairMax players a team). Ties in the
// score are broken by the sum of squared totals, so swaps that even out the teams between
// the largest and the smallest count as progress. The local optima and their best 1-for-1
// neighbours become the candidates. Everything is deterministic: the same input gives the
// same split.

func (p *problem) heuristic(top *shortlist) {
	// Screen every class with the greedy start and 1-for-1 swaps, then polish the most
	// promising few with the costlier moves: with bots a large split has a dozen or more
	// classes, and the best after screening is nearly always the best after polishing.
	var runs []*localSearch
	for k, ci := range p.classOrder() {
		if k == heuristicClasses {
			break
		}
		if !p.open(top, p.classes[ci].lb) {
			continue
		}
		ls := p.newLocalSearch(ci)
		ls.run(false)
		runs = append(runs, ls)
	}
	slices.SortStableFunc(runs, func(a, b *localSearch) int {
		return cmp.Compare(scoreOf(p.obj, a.sums), scoreOf(p.obj, b.sums))
	})
	for i, ls := range runs {
		if i < polishClasses {
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
func (ls *localSearch) kick(salt int) {
	u := len(ls.p.w)
	rounds := min(12, max(0, (48-u)/2))
	rng := rand.New(rand.NewPCG(uint64(u), uint64(salt)))
	best := scoreOf(ls.p.obj, ls.sums)
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
		if sc := scoreOf(ls.p.obj, ls.sums); sc < best {
			best = sc
			copy(bestAssign, ls.assign)
		} else {
			ls.reset(bestAssign)
		}
	}
}

// reset makes assign the current assignment.
func (ls *localSearch) reset(assign []uint8) {
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

// polishClasses is how many classes the heuristic polishes after screening, and
// heuristicClasses how many it screens at most: those with the best bounds (classOrder).
// Without a cap, 4 teams of 256 humans with bots have 123,464 head-count vectors; most put
// nearly everyone on one team.
const (
	polishClasses    = 4
	heuristicClasses = 48
)

type localSearch struct {
	p         *problem
	ci        int
	cl        *class
	assign    []uint8
	sums      []float64
	members   [][]int
	eps       float64 // improvements smaller than these are rounding
	spreadEps float64
	sorted    []int    // scratch: members of a team by weight
	pairs     [][]pair // per team, its pairs by sum (pairsOf), valid while pairsOK
	pairsOK   []bool
}

type pair struct {
	sum  float64
	a, b int
}

func (p *problem) newLocalSearch(ci int) *localSearch {
	cl := &p.classes[ci]
	ls := &localSearch{p: p, ci: ci, cl: cl}
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
	if p.obj != Ratio {
		ls.eps *= max(1, s)
	}
	ls.spreadEps = 1e-12 * max(1, s*s)
	return ls
}

// moveCost ranks a swap: first the score after it, then, to cross plateaus where
// several teams share the largest or the smallest total, the change in the sum of squared
// totals (a swap that keeps max - min but evens the others out is progress).
type moveCost struct{ score, spread float64 }

func (c moveCost) better(d moveCost, eps, spreadEps float64) bool {
	if c.score != d.score && (c.score < d.score-eps || c.score > d.score+eps) {
		return c.score < d.score
	}
	return c.spread < d.spread-spreadEps
}

// cost is the cost after delta moves into team i out of team j.
func (ls *localSearch) cost(i, j int, delta float64) moveCost {
	ti, tj := ls.sums[i]+delta, ls.sums[j]-delta
	lo, hi := min(ti, tj), max(ti, tj)
	for k, s := range ls.sums {
		if k != i && k != j {
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	return moveCost{scoreRange(ls.p.obj, lo, hi), 2 * delta * (ls.sums[i] - ls.sums[j] + delta)}
}

// run improves the assignment until no move helps: 1-for-1 swaps, and with polish 2-for-2
// swaps and (3-4 teams) exact re-splits of two teams.
func (ls *localSearch) run(polish bool) {
	u := len(ls.p.w)
	for iter := 0; iter < 4*u+64; iter++ {
		cur := moveCost{scoreOf(ls.p.obj, ls.sums), 0}
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

// resplitMax is the largest union of two teams resplitPair solves exactly.
const resplitMax = 24

// resplitPair re-splits the players of two teams exactly (meet in the middle on their
// union, same head counts), which is the best those two teams can do whatever the others
// hold; it applies the best such re-split over all pairs if it helps. Only for 3-4 teams:
// for two teams it would be the exact search itself.
func (ls *localSearch) resplitPair(cur moveCost) bool {
	best, bi, bj := cur, -1, -1
	var union, bestUnion []int
	var bestAssign []uint8
	for i := range ls.p.t {
		for j := i + 1; j < ls.p.t; j++ {
			mi, mj := ls.members[i], ls.members[j]
			if len(mi)+len(mj) > resplitMax || len(mi)+len(mj) < 2 {
				continue
			}
			union = append(append(union[:0], mi...), mj...)
			ws := make([]float64, len(union))
			for k, it := range union {
				ws[k] = ls.p.w[it]
			}
			sub := newProblem(ws, 2, Difference, false)
			sub.addClass([]int{len(mi), len(mj)}, nil, []float64{ls.cl.base[i], ls.cl.base[j]})
			top := &shortlist{k: 1}
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
func (ls *localSearch) swap(i, j, a, b int) {
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
func (ls *localSearch) bestSingle() (ok bool, bi, bj, ba, bb int, best moveCost) {
	w := ls.p.w
	best = moveCost{math.Inf(1), 0}
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
func (ls *localSearch) bestDouble() (ok bool, bi, bj int, bpa, bpb pair, best moveCost) {
	best = moveCost{math.Inf(1), 0}
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

// pairMax bounds the players of a team whose pairs bestDouble tries: 32 give 496 pairs
// a team, about 250,000 pair differences between two teams, plenty to find one near the
// target; all pairs of 128 players would cost milliseconds a step for nothing.
const pairMax = 32

// pairsOf returns the pairs of team j's players (of its first pairMax), sorted by sum;
// the list is kept until a move changes the team.
func (ls *localSearch) pairsOf(j int) []pair {
	if ls.pairs == nil {
		ls.pairs = make([][]pair, ls.p.t)
		ls.pairsOK = make([]bool, ls.p.t)
	}
	if ls.pairsOK[j] {
		return ls.pairs[j]
	}
	w := ls.p.w
	m := ls.members[j][:min(len(ls.members[j]), pairMax)]
	out := ls.pairs[j][:0]
	for x := range m {
		for y := x + 1; y < len(m); y++ {
			out = append(out, pair{w[m[x]] + w[m[y]], m[x], m[y]})
		}
	}
	slices.SortFunc(out, func(a, b pair) int { return cmp.Compare(a.sum, b.sum) })
	ls.pairs[j], ls.pairsOK[j] = out, true
	return out
}

// offer gives the local optimum and its 1-for-1 neighbours to top.
func (ls *localSearch) offer(top *shortlist) {
	p := ls.p
	var buf [MaxTeams]float64
	sums := p.totals(ls.cl, ls.assign, buf[:0])
	if sc := scoreOf(p.obj, sums); top.accepts(sc) {
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
					sc := scoreOf(p.obj, p.totals(ls.cl, ls.assign, buf[:0]))
					if top.accepts(sc) {
						top.insert(sc, ls.ci, ls.assign)
					}
					ls.assign[a], ls.assign[b] = uint8(i), uint8(j)
				}
			}
		}
	}
}
