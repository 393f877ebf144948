package twoteam

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// ratingWindow serves anchor a by the nearest-tickets rule and reports whether it made a
// match. The acceptable candidates are walked outward from the anchor, nearest first;
// per class of the anchor (its regions, or with rules the classes of classes.go) p.reach holds
// the head counts the candidates walked so far can reach with the anchor, and a candidate
// that completes a match in some class has the match of that prefix picked (finish). The
// walk stops at the first pick made, after MaxPicks picks the rules judged on the match
// turned down (team_balance, and distance for an anchor past its optional_after_s), or
// when both sides are beyond the anchor's interval; an anchor left without a match says
// why (explain).
func (p *pass) ratingWindow(a int32) bool {
	an := &p.nodes[a]
	ra, iva, ma, sa := an.rating, an.interval, an.regions, int(an.size)
	p.picks, p.turnedDown, p.lookedAhead, p.exhausted = 0, matchpool.Wait{}, 0, 0
	if p.hasRules {
		if ma = p.anchorClasses(a); ma == 0 {
			p.waitZero(a)
			return false
		}
	}
	for m := ma; m != 0; m &= m - 1 {
		p.reach[bits.TrailingZeros64(m)] = p.heads.one(sa)
	}
	w, wm, rej := p.walked[:0], p.walkedClasses[:0], p.rejected[:0]
	o := p.outwardIn(a, p.partitionRule >= 0)
	for {
		dl, dh := math.Inf(1), math.Inf(1)
		if o.left >= 0 {
			dl = matchrules.Distance(ra, p.nodes[o.left].rating)
		}
		if o.right >= 0 {
			dh = matchrules.Distance(ra, p.nodes[o.right].rating)
		}
		if dl > iva && dh > iva {
			break
		}
		c, d := o.step(p, dl, dh)
		cn := &p.nodes[c]
		m, stage := p.admit(a, c, d)
		if m == 0 {
			rej = append(rej, rejection{c, stage})
			continue
		}
		w, wm = append(w, c), append(wm, m)
		var done uint64
		for ; m != 0; m &= m - 1 {
			r := bits.TrailingZeros64(m)
			var x headSet
			p.heads.place(&x, &p.reach[r], int(cn.size))
			if p.heads.complete(&x) {
				done |= 1 << r
			}
			for i := range p.heads.words {
				p.reach[r][i] |= x[i]
			}
		}
		if done &^= p.exhausted; done != 0 {
			if p.finish(a, w, wm, done, o) {
				p.walked, p.walkedClasses, p.rejected = w, wm, rej
				return true
			}
			if p.picks >= MaxPicks || ma&^p.exhausted == 0 {
				break // every class of the anchor's exhausted: no match of it is even enough
			}
		}
	}
	p.walked, p.walkedClasses, p.rejected = w, wm, rej
	p.explain(a, w, wm, rej)
	return false
}

// MaxPicks bounds the matches an anchor's walk picks and the rules judged on the match
// turn down: each costs a split, and a walk past the first completion finds a pick in every
// class at every step.
const MaxPicks = 8

// cursor walks the unmatched positions outward from a centre: nearest first, and among
// the equally near, oldest first. To the right, positions in a run of equal ratings are
// in age order already; to the left they are walked backward, so the cursor jumps to the
// start of each run (l) and walks it forward to its end (lEnd) before the next run left.
// With part, it walks the links of the centre's partition (pass.partitionRule) only.
type cursor struct {
	left, leftEnd, leftNext int32 // -1: nothing left on that side
	right                   int32
	part                    bool
}

func (p *pass) outward(centre int32) cursor { return p.outwardIn(centre, false) }

func (p *pass) outwardIn(centre int32, part bool) cursor {
	o := cursor{part: part}
	o.right = o.next(p, centre)
	o.enterLeft(p, o.prev(p, centre))
	return o
}

func (o *cursor) next(p *pass, i int32) int32 {
	if o.part {
		return p.partNext[i]
	}
	return p.nodes[i].next
}

func (o *cursor) prev(p *pass, i int32) int32 {
	if o.part {
		return p.partPrev[i]
	}
	return p.nodes[i].prev
}

// enterLeft starts the run of equal ratings that ends at position e.
func (o *cursor) enterLeft(p *pass, e int32) {
	o.left, o.leftEnd = e, e
	if e < 0 {
		return
	}
	for s := o.prev(p, e); s >= 0 && p.nodes[s].rating == p.nodes[e].rating; s = o.prev(p, s) {
		o.left = s
	}
	o.leftNext = o.prev(p, o.left)
}

// step takes the nearer of the two sides' next positions, at distances dl and dh (+Inf
// for a side that is done), the older one on a tie, and returns it with its distance.
func (o *cursor) step(p *pass, dl, dh float64) (int32, float64) {
	if dl < dh || dl == dh && o.left >= 0 && p.nodes[o.left].rank < p.nodes[o.right].rank {
		c := o.left
		if c == o.leftEnd {
			o.enterLeft(p, o.leftNext)
		} else {
			o.left = o.next(p, c)
		}
		return c, dl
	}
	c := o.right
	o.right = o.next(p, c)
	return c, dh
}

// admit judges candidate c, at distance d from anchor a in rating, as the walk does: the
// classes of the anchor's it is in, or 0 and the stage that turned it away.
func (p *pass) admit(a, c int32, d float64) (uint64, int32) {
	cn := &p.nodes[c]
	if d > cn.interval {
		return 0, stageInterval
	}
	m := cn.regions & p.nodes[a].regions
	if m == 0 {
		return 0, stageLatency
	}
	if p.hasRules {
		var r int
		if m, r = p.classesOf(a, c, m); m == 0 {
			return 0, stageRules + int32(r)
		}
	}
	if p.avoid != nil && !p.avoid.Team && p.avoid.Apart(p.nodes[a].input, cn.input) {
		return 0, int32(p.stageAvoid())
	}
	return m, 0
}

// finish makes the match of anchor a from the walked candidates w (in the classes wm),
// whose last one completed a match in the classes of done (o: the walk's cursor, at the
// next candidate): the pick of the class whose region has the smallest worst latency, then
// the first class, or a more even match of its class the look-ahead finds (evenOut); the
// next class's pick when one is turned down (a rule judged on the match, the balance). It
// reports whether a match was made.
func (p *pass) finish(a int32, w []int32, wm []uint64, done uint64, o cursor) bool {
	if done&(done-1) == 0 { // one class: the usual case
		k := bits.TrailingZeros64(done)
		p.choose(a, w, wm, k)
		return p.pickClass(a, w, wm, k, o)
	}
	p.tries = p.tries[:0]
	for m := done; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		p.choose(a, w, wm, k)
		_, wl := p.region(p.chosen, 1<<p.classRegion(k))
		p.tries = append(p.tries, try{k, wl})
	}
	slices.SortStableFunc(p.tries, func(x, y try) int { return cmp.Compare(x.worst, y.worst) })
	for _, t := range p.tries {
		if p.picks >= MaxPicks {
			return false
		}
		p.choose(a, w, wm, t.class)
		if p.pickClass(a, w, wm, t.class, o) {
			return true
		}
	}
	return false
}

// try is a class whose pick finish may make, with its region's worst latency.
type try struct {
	class int
	worst float64
}

// choose sets p.chosen to the anchor and the tickets of w it takes in class k: the last
// one of w, and each earlier one in k, nearest first, when a match can still be completed
// with it. need[i] holds the head counts from which the tickets w[i:] (the last one
// included) can complete a match. With avoid lists of scope match, a ticket that may not
// meet one taken already is passed over, unless no match is then completed: the pick is
// then the one without them, which keepApart turns down.
func (p *pass) choose(a int32, w []int32, wm []uint64, k int) {
	if p.avoid == nil || p.avoid.Team || !p.chooseFrom(a, w, wm, k, true) {
		p.chooseFrom(a, w, wm, k, false)
	}
}

// chooseFrom is choose, passing over with apart the tickets that may not meet one taken,
// and reports whether the tickets taken complete a match.
func (p *pass) chooseFrom(a int32, w []int32, wm []uint64, k int, apart bool) bool {
	// Usually every ticket walked is in class k and they make 2 x TeamSize players with the
	// anchor: then the match is all of them (no other subset has that many players).
	n := int(p.nodes[a].size)
	for i, c := range w {
		if wm[i]>>k&1 == 0 {
			n = -1
			break
		}
		n += int(p.nodes[c].size)
	}
	if n == 2*p.teamSize && !apart {
		p.chosen = append(append(p.chosen[:0], a), w...)
		return true
	}
	last := len(w)
	p.needFrom = scratch.Resize(p.needFrom, last+1)
	need := p.needFrom
	need[last] = p.heads.target()
	for i := last - 1; i >= 0; i-- {
		c := w[i]
		if wm[i]>>k&1 == 0 {
			need[i] = need[i+1]
			continue
		}
		p.heads.unplace(&need[i], &need[i+1], int(p.nodes[c].size))
		if i < last-1 { // the last one is taken: no state skips it
			for x := range p.heads.words {
				need[i][x] |= need[i+1][x]
			}
		}
	}
	cur := p.heads.one(int(p.nodes[a].size))
	p.chosen = append(p.chosen[:0], a)
	for i, c := range w {
		if wm[i]>>k&1 == 0 || apart && p.meetsChosen(c) {
			continue
		}
		var n headSet
		p.heads.place(&n, &cur, int(p.nodes[c].size))
		for x := range p.heads.words {
			n[x] &= need[i+1][x]
		}
		if !p.heads.empty(&n) {
			cur = n
			p.chosen = append(p.chosen, c)
		}
	}
	return p.heads.complete(&cur)
}

// region returns the region among those of mask that every ticket of c accepts with the
// smallest worst latency (the first by name on a tie), and that latency: -1 with a latency
// of 0 when no ticket of c has data, and with +Inf when no region of mask will do.
func (p *pass) region(c []int32, mask uint64) (int, float64) {
	if !p.latency {
		return -1, 0
	}
	var worst [matchpool.MaxRegions]float64
	data := false
	for _, pos := range c {
		mask &= p.nodes[pos].regions
		n := &p.nodes[pos]
		for _, l := range p.latencies[n.latenciesAt : n.latenciesAt+int32(n.latencyCount)] {
			worst[l.region] = max(worst[l.region], l.ms)
		}
		data = data || n.latencyCount > 0
	}
	if !data {
		return -1, 0
	}
	best, bw := -1, math.Inf(1)
	for m := mask; m != 0; m &= m - 1 {
		r := bits.TrailingZeros64(m)
		if worst[r] < bw {
			best, bw = r, worst[r]
		}
	}
	return best, bw
}
