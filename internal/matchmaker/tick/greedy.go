package tick

import (
	"math"
	"sort"
)

// none marks a position the tree no longer offers.
const none = math.MaxInt32

// minTree answers "the oldest ticket in a range of positions" for greedy_pairs: a segment
// tree over positions holding ranks, none for a ticket matched or set aside.
type minTree struct {
	n int
	v []int32 // v[n+pos] is the leaf of pos; v[i] = min(v[2i], v[2i+1])
}

func (m *minTree) init(rank []int32) {
	m.n = len(rank)
	m.v = make([]int32, 2*m.n)
	copy(m.v[m.n:], rank)
	for i := m.n - 1; i > 0; i-- {
		m.v[i] = min(m.v[2*i], m.v[2*i+1])
	}
}

func (m *minTree) set(pos int, x int32) {
	i := pos + m.n
	m.v[i] = x
	for i > 1 {
		i /= 2
		m.v[i] = min(m.v[2*i], m.v[2*i+1])
	}
}

// min is the least value over positions [lo, hi).
func (m *minTree) min(lo, hi int) int32 {
	r := int32(none)
	for lo, hi = lo+m.n, hi+m.n; lo < hi; lo, hi = lo/2, hi/2 {
		if lo&1 != 0 {
			r = min(r, m.v[lo])
			lo++
		}
		if hi&1 != 0 {
			hi--
			r = min(r, m.v[hi])
		}
	}
	return r
}

// greedyPairs serves anchor a by the thesis's rule within the anchor's acceptable tickets
// (see Run) and reports whether it made a match; when it did not, every ticket it touched
// is back as it was.
//
// Sub-anchors come from the tree, oldest first, over the positions within the anchor's
// interval; one that does not accept the anchor, shares no region with the match so far,
// leaves no room or finds no opponent is set aside (none in the tree) until the match is
// made or given up.
func (p *pass) greedyPairs(a int32) bool {
	ra, iva := p.key[a], p.iv[a]
	lo := sort.Search(len(p.key), func(i int) bool { return p.key[i] >= ra || dist(ra, p.key[i]) <= iva })
	hi := sort.Search(len(p.key), func(i int) bool { return p.key[i] > ra && dist(ra, p.key[i]) > iva })
	t := p.t
	var cur row
	cur[p.size[a]] = 1
	total, regions := int(p.size[a]), p.mask[a]
	p.chosen = append(p.chosen[:0], a)
	p.touched = append(p.touched[:0], a)
	p.state[a] = placed
	p.tree.set(int(a), none)
	s := a
	for total < 2*t {
		sub := cur
		if s < 0 { // the next sub-anchor
			k := p.tree.min(lo, hi)
			if k == none {
				break
			}
			s = p.posOf[k]
			p.tree.set(int(s), none)
			p.touched = append(p.touched, s)
			if dist(ra, p.key[s]) > p.iv[s] || p.mask[s]&regions == 0 || total+int(p.size[s]) >= 2*t {
				s = -1
				continue
			}
			if sub = p.then(&cur, int(p.size[s])); sub == (row{}) {
				s = -1
				continue
			}
		}
		with := total
		if s != a {
			with += int(p.size[s])
		}
		o, after := p.opponent(a, s, &sub, with, regions&p.mask[s])
		if o < 0 {
			if s == a {
				break // the anchor found no opponent
			}
			s = -1
			continue
		}
		if s != a {
			p.state[s] = placed
			p.chosen = append(p.chosen, s)
		}
		p.state[o] = placed
		p.chosen = append(p.chosen, o)
		p.tree.set(int(o), none)
		p.touched = append(p.touched, o)
		cur, total = after, with+int(p.size[o])
		regions &= p.mask[s] & p.mask[o]
		s = -1
	}
	ok := total == 2*t && p.complete(&cur)
	for _, pos := range p.touched {
		if ok && p.state[pos] == placed {
			continue // take, in makeMatch, marks it matched
		}
		p.state[pos] = waiting
		p.tree.set(int(pos), p.rank[pos])
	}
	if ok {
		p.makeMatch(p.chosen)
	}
	return ok
}

// opponent returns the nearest ticket to sub-anchor s, walking outward from it, that is
// waiting, accepts and is accepted by both s and the anchor a, shares a region of regions,
// and fits: placed after the head counts in cur (with players so far) it leaves a state
// from which the teams can still be filled, and completes them if it brings the players
// to 2 x TeamSize. It returns -1 if there is none, else the ticket and the head counts
// after it.
func (p *pass) opponent(a, s int32, cur *row, players int, regions uint64) (int32, row) {
	ra, iva, rs, ivs := p.key[a], p.iv[a], p.key[s], p.iv[s]
	o := p.outward(s)
	for {
		// A side ends at the edge of the anchor's interval as well as of the sub-anchor's.
		dl, dh := math.Inf(1), math.Inf(1)
		if o.l >= 0 && (p.key[o.l] >= ra || dist(ra, p.key[o.l]) <= iva) {
			dl = dist(rs, p.key[o.l])
		}
		if o.h >= 0 && (p.key[o.h] <= ra || dist(ra, p.key[o.h]) <= iva) {
			dh = dist(rs, p.key[o.h])
		}
		if dl > ivs && dh > ivs {
			return -1, row{}
		}
		c, d := o.step(p, dl, dh)
		if p.state[c] != waiting || d > p.iv[c] || p.mask[c]&regions == 0 {
			continue
		}
		if da := dist(ra, p.key[c]); da > iva || da > p.iv[c] {
			continue
		}
		n := players + int(p.size[c])
		if n > 2*p.t {
			continue
		}
		after := p.then(cur, int(p.size[c]))
		if after == (row{}) || n == 2*p.t && !p.complete(&after) {
			continue
		}
		return c, after
	}
}
