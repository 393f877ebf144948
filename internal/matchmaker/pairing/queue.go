package pairing

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// The queue index behind Make.
//
// Queue indices are sorted by (rating, queue index). Players of equal rating form a bucket:
// a contiguous range order[start[b]:start[b+1]], oldest first. Every removal from a bucket
// is at its head, because the anchor is always the oldest player left and every tie of
// distance goes to the older player, so the players left in bucket b are exactly
// order[head[b]:start[b+1]]. The non-empty buckets form a doubly linked list in rating
// order (prev, next; -1 ends it), so a nearest-neighbour search walks outward from the
// anchor's bucket in O(1) per candidate, and a removal is O(1).

// Player states.
const (
	inQueue uint8 = iota
	matched
	leftOut // an anchor that found no opponent within Interval.Max
)

type queue struct {
	r    []float64
	opts Options

	order    []int32 // queue indices sorted by (rating, queue index)
	bucketOf []int32 // queue index -> bucket
	start    []int32 // bucket b is order[start[b]:start[b+1]]
	head     []int32 // first position of bucket b still in the queue
	prev     []int32 // previous non-empty bucket in rating order, -1 if none
	next     []int32 // next non-empty bucket, -1 if none
	value    []float64

	state  []uint8 // per queue index
	left   int     // players still in the queue
	oldest int     // no player still in the queue has a smaller queue index

	matches []Match
	players []int  // backing array of every Team.Players
	pairs   []Pair // backing array of every Match.Pairs
}

func newQueue(r []float64, opts Options) *queue {
	n := len(r)
	ids := make([]int32, 2*n)
	order, bucketOf := ids[:n:n], ids[n:]
	sortQueue(r, order)
	nb := 0
	for i, q := range order {
		if i > 0 && r[q] != r[order[i-1]] { // -0 and +0 share a bucket
			nb++
		}
		bucketOf[q] = int32(nb)
	}
	if n > 0 {
		nb++
	}
	links := make([]int32, 4*nb+1)
	p := &queue{
		r: r, opts: opts, order: order, bucketOf: bucketOf,
		start: links[0 : nb+1 : nb+1],
		head:  links[nb+1 : 2*nb+1 : 2*nb+1],
		prev:  links[2*nb+1 : 3*nb+1 : 3*nb+1],
		next:  links[3*nb+1:],
		value: make([]float64, nb),
		state: make([]uint8, n),
		left:  n,
	}
	for i, q := range order {
		b := bucketOf[q]
		if i == 0 || b != bucketOf[order[i-1]] {
			p.start[b] = int32(i)
			p.head[b] = int32(i)
			p.value[b] = r[q]
			p.prev[b] = b - 1
			p.next[b] = b + 1
		}
	}
	p.start[nb] = int32(n)
	if nb > 0 {
		p.next[nb-1] = -1
	}

	// Upper bounds: every match uses 2*TeamSize players.
	maxMatches := n / (2 * opts.TeamSize)
	p.matches = make([]Match, 0, maxMatches)
	p.players = make([]int, 0, maxMatches*2*opts.TeamSize)
	p.pairs = make([]Pair, 0, maxMatches*opts.TeamSize)
	return p
}

// radixMin is the queue length from which a radix sort beats a comparison sort.
const radixMin = 1024

// sortQueue fills order with the queue indices sorted by (rating, queue index).
// Ratings are finite; -0 and +0 are equal.
func sortQueue(r []float64, order []int32) { sortQueueWith(r, order, nil) }

// sortQueueWith is sortQueue with its work arrays from b (nil: its own).
func sortQueueWith(r []float64, order []int32, b *SortBuffers) {
	n := len(r)
	for i := range order {
		order[i] = int32(i)
	}
	if n < radixMin {
		slices.SortFunc(order, func(a, b int32) int {
			switch ra, rb := r[a], r[b]; {
			case ra < rb:
				return -1
			case ra > rb:
				return 1
			}
			return int(a) - int(b)
		})
		return
	}
	// LSD radix sort on the ratings' bits mapped to an unsigned order; each pass is stable
	// and the input is in queue order, so equal ratings stay in queue order.
	if b == nil {
		b = new(SortBuffers)
	}
	if cap(b.keys) < 2*n {
		b.keys, b.idx = make([]uint64, 2*n), make([]int32, n)
	}
	keys, idx := b.keys[:2*n], b.idx[:n]
	src, dst := keys[:n:n], keys[n:]
	from, to := order, idx
	for i, x := range r {
		if x == 0 {
			x = 0 // -0 sorts with +0
		}
		b := math.Float64bits(x)
		if b>>63 != 0 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		src[i] = b
	}
	const digit = 11 // bits per pass: six passes, 2048 counters
	var count [1 << digit]int32
	for shift := 0; shift < 64; shift += digit {
		clear(count[:])
		for _, k := range src {
			count[(k>>shift)&(1<<digit-1)]++
		}
		if count[(src[0]>>shift)&(1<<digit-1)] == int32(n) {
			continue // every key has the same digit here
		}
		sum := int32(0)
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for i, k := range src {
			d := (k >> shift) & (1<<digit - 1)
			dst[count[d]] = k
			to[count[d]] = from[i]
			count[d]++
		}
		src, dst = dst, src
		from, to = to, from
	}
	if &from[0] != &order[0] {
		copy(order, from)
	}
}

// take removes the head of bucket b from the queue and returns it.
func (p *queue) take(b int32) int32 {
	h := p.head[b]
	q := p.order[h]
	h++
	p.head[b] = h
	if h == p.start[b+1] { // b is empty: unlink it, keeping its own links for the caller
		pv, nx := p.prev[b], p.next[b]
		if pv >= 0 {
			p.next[pv] = nx
		}
		if nx >= 0 {
			p.prev[nx] = pv
		}
	}
	p.left--
	return q
}

// anchor returns the oldest player still in the queue; the queue must not be empty.
func (p *queue) anchor() int32 {
	for p.state[p.oldest] != inQueue {
		p.oldest++
	}
	return int32(p.oldest)
}

// cmpSides compares, exactly, the distance from a of x < a with that of y > a:
// -1 if x is nearer, 0 if they are equally near, 1 if y is nearer. TwoSum gives each
// difference as an unevaluated sum s + e (exact: no overflow within MaxMagnitude);
// rounding is monotone, so the rounded parts decide unless they are equal.
func cmpSides(a, x, y float64) int {
	s1, e1 := twoSum(a, -x)
	s2, e2 := twoSum(y, -a)
	if c := cmp.Compare(s1, s2); c != 0 {
		return c
	}
	return cmp.Compare(e1, e2)
}

// twoSum returns s = fl(a+b) and e with s + e == a + b exactly (Knuth's TwoSum).
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

// greedyPairs is the thesis's loop.
func (p *queue) greedyPairs() {
	t := p.opts.TeamSize
	iv := p.opts.Interval
	cur := make([]Pair, 0, t) // the match under construction
	for p.left >= 2*(t-len(cur)) {
		a := p.anchor()
		b := p.bucketOf[a]
		p.take(b) // a is the head of its bucket: the oldest of its rating
		ra := p.r[a]

		// The nearest player left: the next of the anchor's own rating, else the nearer
		// of the neighbouring buckets, the older head on a tie. The queue is not empty:
		// it held at least 2 players before the anchor left it.
		nb := b
		if p.head[b] == p.start[b+1] {
			l, h := p.prev[b], p.next[b]
			switch {
			case l < 0:
				nb = h
			case h < 0:
				nb = l
			default:
				c := cmpSides(ra, p.value[l], p.value[h])
				if c == 0 {
					c = cmp.Compare(p.order[p.head[l]], p.order[p.head[h]])
				}
				nb = l
				if c > 0 {
					nb = h
				}
			}
		}
		o := p.order[p.head[nb]]
		d := math.Abs(ra - p.r[o])
		_, step := iv.step(d)
		if step > iv.Max {
			p.state[a] = leftOut
			continue
		}
		p.take(nb)
		p.state[a], p.state[o] = matched, matched
		cur = append(cur, Pair{Players: [2]int{int(a), int(o)}, Difference: d, Interval: step})
		if len(cur) == t {
			p.addMatch(cur, 0)
			cur = cur[:0]
		}
	}
	for _, pr := range cur { // dissolve the incomplete match
		p.state[pr.Players[0]], p.state[pr.Players[1]] = inQueue, inQueue
	}
}

// ratingWindow is the default strategy: the oldest player and the 2t-1 players nearest him
// in rating make a match (unless its interval exceeds Max: then he is left out), paired
// adjacently in rating order, the pairs' sides chosen for the most even totals.
func (p *queue) ratingWindow() {
	t := p.opts.TeamSize
	need := int32(2 * t)
	iv := p.opts.Interval
	var (
		sel   = make([]int32, 0, need) // positions in order of the anchor and its window
		pairs [MaxTeamSize]Pair
		diffs [MaxTeamSize]float64
	)
	for int32(p.left) >= need {
		a := p.anchor()
		b := p.bucketOf[a]
		var far float64
		sel, far = p.nearest(a, sel[:0], need)
		_, window := iv.step(math.Abs(far - p.r[a]))
		ap, widest := p.pairAdjacent(sel, a, pairs[:t], diffs[:t])
		// Two players on opposite sides of the anchor are never adjacent, so no pair differs
		// by more than the farthest player from the anchor and only the window can exceed
		// Max; the pairs are checked all the same.
		if max(widest, window) > iv.Max {
			p.take(b)
			p.state[a] = leftOut
			continue
		}
		chooseSides(pairs[:t], diffs[:t], ap, pairs[ap].Players[1] == int(a))
		for _, pos := range sel { // each bucket's share of sel is a prefix from its head
			q := p.take(p.bucketOf[p.order[pos]])
			p.state[q] = matched
		}
		p.addMatch(pairs[:t], window)
	}
}

// nearest appends to sel the positions in order of the anchor a and the players nearest
// him in rating, need in all: those of his rating, oldest first, then outward, the nearer
// side first and the older head on a tie. It returns sel and the rating farthest from a's.
func (p *queue) nearest(a int32, sel []int32, need int32) ([]int32, float64) {
	b := p.bucketOf[a]
	ra := p.r[a]
	for pos := p.head[b]; pos < p.start[b+1] && int32(len(sel)) < need; pos++ {
		sel = append(sel, pos)
	}
	l, h := p.prev[b], p.next[b]
	var lp, hp int32
	if l >= 0 {
		lp = p.head[l]
	}
	if h >= 0 {
		hp = p.head[h]
	}
	far := ra
	for int32(len(sel)) < need {
		lower := h < 0
		if !lower && l >= 0 {
			c := cmpSides(ra, p.value[l], p.value[h])
			lower = c < 0 || c == 0 && p.order[lp] < p.order[hp]
		}
		if lower {
			sel = append(sel, lp)
			far = p.value[l]
			if lp++; lp == p.start[l+1] {
				if l = p.prev[l]; l >= 0 {
					lp = p.head[l]
				}
			}
		} else {
			sel = append(sel, hp)
			far = p.value[h]
			if hp++; hp == p.start[h+1] {
				if h = p.next[h]; h >= 0 {
					hp = p.head[h]
				}
			}
		}
	}
	return sel, far
}

// pairAdjacent sorts sel and pairs its players adjacently in (rating, queue index) order
// (positions in order are that order), lower player first, filling pairs and their
// differences diffs. It returns the index of the anchor a's pair and the widest interval
// of a pair.
func (p *queue) pairAdjacent(sel []int32, a int32, pairs []Pair, diffs []float64) (ap int, widest float64) {
	slices.Sort(sel)
	for i := range pairs {
		lo, hi := p.order[sel[2*i]], p.order[sel[2*i+1]]
		d := math.Abs(p.r[hi] - p.r[lo]) // Abs turns -0 into 0
		_, step := p.opts.Interval.step(d)
		widest = max(widest, step)
		diffs[i] = d
		pairs[i] = Pair{Players: [2]int{int(lo), int(hi)}, Difference: d, Interval: step}
		if lo == a || hi == a {
			ap = i
		}
	}
	return ap, widest
}

// chooseSides puts each pair's players on the teams (Players[0] on team 0) that make the
// totals most even, the anchor's pair (ap) keeping its anchor on team 0. With team0 - team1
// = sum of c_i, c_i = -d_i when pair i puts its lower player on team 0 and +d_i otherwise,
// it searches the 2^(t-1) choices of the pairs other than the anchor's in Gray-code order,
// one flip per step; a tie goes to the smallest mask (bit j set: the j-th other pair puts
// its higher player on team 0).
func chooseSides(pairs []Pair, diffs []float64, ap int, anchorHigh bool) {
	var free [MaxTeamSize]float64 // twice the difference of each pair but the anchor's
	sum := -diffs[ap]
	if anchorHigh {
		sum = diffs[ap]
	}
	nf := 0
	for i := range pairs {
		if i != ap {
			sum -= diffs[i]
			free[nf] = 2 * diffs[i]
			nf++
		}
	}
	best, bestMask := math.Abs(sum), uint(0)
	mask := uint(0)
	for g := uint(1); g < 1<<nf; g++ {
		bit := uint(bits.TrailingZeros(g))
		mask ^= 1 << bit
		if mask&(1<<bit) != 0 {
			sum += free[bit]
		} else {
			sum -= free[bit]
		}
		if s := math.Abs(sum); s < best || s == best && mask < bestMask {
			best, bestMask = s, mask
		}
	}
	j := 0
	for i := range pairs {
		high := anchorHigh
		if i != ap {
			high = bestMask&(1<<j) != 0
			j++
		}
		if high {
			pairs[i].Players[0], pairs[i].Players[1] = pairs[i].Players[1], pairs[i].Players[0]
		}
	}
}

// addMatch appends the match made of pairs (copied) to the result.
func (p *queue) addMatch(pairs []Pair, window float64) {
	t := len(pairs)
	base := len(p.players)
	for _, pr := range pairs {
		p.players = append(p.players, pr.Players[0])
	}
	for _, pr := range pairs {
		p.players = append(p.players, pr.Players[1])
	}
	t0 := p.players[base : base+t : base+t]
	t1 := p.players[base+t : base+2*t : base+2*t]
	pb := len(p.pairs)
	p.pairs = append(p.pairs, pairs...)
	var tot0, tot1 float64
	widest := window
	for i, pr := range pairs {
		tot0 += p.r[t0[i]]
		tot1 += p.r[t1[i]]
		widest = max(widest, pr.Interval)
	}
	sd := math.Abs(tot0 - tot1)
	p.matches = append(p.matches, Match{
		Teams:             [2]Team{{Players: t0, RatingTotal: tot0}, {Players: t1, RatingTotal: tot1}},
		Pairs:             p.pairs[pb : pb+t : pb+t],
		Interval:          widest,
		SkillDifference:   sd,
		AverageDifference: sd / float64(t),
	})
}

func (p *queue) result() Result {
	unmatched := 0
	for _, s := range p.state {
		if s != matched {
			unmatched++
		}
	}
	res := Result{Matches: p.matches, Unmatched: make([]int, 0, unmatched)}
	for i, s := range p.state {
		if s != matched {
			res.Unmatched = append(res.Unmatched, i)
		}
	}
	return res
}
