package teams

import (
	"math"
	"sync"
)

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

// subsets holds the subset sums of one half: list c is sums[off[c]:off[c+1]].
type subsets struct {
	sums  []float64
	masks []uint32
	off   []int
	tmpS  []float64
	tmpM  []uint32
}

var subsetsPool = sync.Pool{New: func() any { return new(subsets) }}

// build lists the subsets of ws by size, each list sorted by sum; with forceFirst only
// subsets holding ws[0].
func (s *subsets) build(ws []float64, forceFirst bool) {
	n := len(ws)
	size := 1 << n
	if forceFirst && n > 0 {
		size >>= 1
	}
	s.sums, s.tmpS = grow(s.sums, size), grow(s.tmpS, size)
	s.masks, s.tmpM = growU(s.masks, size), growU(s.tmpM, size)
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

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

func growU(b []uint32, n int) []uint32 {
	if cap(b) < n {
		return make([]uint32, n)
	}
	return b[:n]
}

// mitmMax is the largest problem meet in the middle is used for: 40 items make halves of
// 2^19 and 2^20 subset sums, 12 bytes each, twice (the merge ping-pongs): 38 MB of scratch,
// pooled between calls. The callers' limits (ExactLimit2, resplitMax) stay within it.
const mitmMax = 40

func (p *problem) mitm(top *shortlist) {
	u := len(p.w)
	if u > mitmMax {
		panic("teams: meet in the middle on more than mitmMax items")
	}
	fix := p.sym && u > 0
	hl := u / 2
	if fix {
		hl = (u + 1) / 2
	}
	L := subsetsPool.Get().(*subsets)
	R := subsetsPool.Get().(*subsets)
	defer subsetsPool.Put(L)
	defer subsetsPool.Put(R)
	L.build(p.w[:hl], fix)
	R.build(p.w[hl:], false)
	nR := u - hl
	scratch := make([]uint8, u)
	for _, ci := range p.classOrder() {
		cl := &p.classes[ci]
		if !p.open(top, cl.lb) {
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
// class the score only grows with |sum_A - target|, so the k-th best score kept, less
// p.tol (see open), is turned into a window around the target (a little wider for the
// rounding of the sums; mitmInsert scores exactly) and the walks stop at its edges. Pairs
// that would only tie the k-th lie outside the window: once the list holds k splits as good
// as the best, the rest of the class costs one step per left subset.
func (p *problem) mitmClass(top *shortlist, ci, a, b int, L, R *subsets, hl, nR int, scratch []uint8) {
	cl := &p.classes[ci]
	cA := cl.caps[a]
	total := p.total + cl.base[a] + cl.base[b]
	target := (p.total + cl.base[b] - cl.base[a]) / 2
	window := func() float64 {
		if len(top.list) < top.k {
			return math.Inf(1)
		}
		s := top.list[len(top.list)-1].score - p.tol // a pair must score below this
		if s < 0 {
			return -1 // nothing can
		}
		d := s // the largest |total_A - total_B| scoring s
		if p.obj == Ratio {
			if s >= 1 {
				return math.Inf(1)
			}
			d = s * total / (2 - s) // score = |d| / max = 2|d| / (total + |d|)
		}
		// The walks compare a pair's sum, rounded otherwise than its score: a little wider.
		return d/2 + 1e-13*total
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
			if win < 0 {
				return
			}
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
func (p *problem) mitmInsert(top *shortlist, ci, a, b int, ml, mr uint32, hl int, scratch []uint8) bool {
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
	var buf [MaxTeams]float64
	sc := scoreOf(p.obj, p.totals(cl, scratch, buf[:0]))
	if !top.accepts(sc) {
		return false
	}
	top.insert(sc, ci, scratch)
	return true
}
