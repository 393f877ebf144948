package twoteam

import (
	"math"
	"sort"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// none marks a position the tree no longer offers.
const none = math.MaxInt32

// minTree answers "the oldest ticket in a range of positions" for greedy_pairs: a segment
// tree over positions holding ranks, none for a ticket matched or set aside.
type minTree struct {
	n     int
	nodes []int32 // v[n+pos] is the leaf of pos; v[i] = min(v[2i], v[2i+1])
}

func (m *minTree) init(rank []int32) {
	m.n = len(rank)
	m.nodes = scratch.Resize(m.nodes, 2*m.n)
	copy(m.nodes[m.n:], rank)
	for i := m.n - 1; i > 0; i-- {
		m.nodes[i] = min(m.nodes[2*i], m.nodes[2*i+1])
	}
}

func (m *minTree) set(pos int, x int32) {
	i := pos + m.n
	m.nodes[i] = x
	for i > 1 {
		i /= 2
		v := min(m.nodes[2*i], m.nodes[2*i+1])
		if m.nodes[i] == v {
			return // the ancestors hold what they held
		}
		m.nodes[i] = v
	}
}

// min is the least value over positions [lo, hi).
func (m *minTree) min(lo, hi int) int32 {
	r := int32(none)
	for lo, hi = lo+m.n, hi+m.n; lo < hi; lo, hi = lo/2, hi/2 {
		if lo&1 != 0 {
			r = min(r, m.nodes[lo])
			lo++
		}
		if hi&1 != 0 {
			hi--
			r = min(r, m.nodes[hi])
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
	ra, iva := p.nodes[a].rating, p.nodes[a].interval
	lo := sort.Search(len(p.nodes), func(i int) bool { return p.nodes[i].rating >= ra || matchrules.Distance(ra, p.nodes[i].rating) <= iva })
	hi := sort.Search(len(p.nodes), func(i int) bool { return p.nodes[i].rating > ra && matchrules.Distance(ra, p.nodes[i].rating) > iva })
	t := p.teamSize
	cur := p.heads.one(int(p.nodes[a].size))
	total, regions := int(p.nodes[a].size), p.nodes[a].regions
	if p.hasRules {
		if regions = p.anchorClasses(a); regions == 0 {
			return false
		}
	}
	p.chosen = append(p.chosen[:0], a)
	p.touched = append(p.touched[:0], a)
	p.nodes[a].state = placed
	p.oldest.set(int(a), none)
	s := a
	for total < 2*t {
		with, sub := total, cur
		if s != a { // the next sub-anchor
			k := p.oldest.min(lo, hi)
			if k == none {
				break
			}
			s = p.positionOf[k]
			p.oldest.set(int(s), none)
			p.touched = append(p.touched, s)
			with += int(p.nodes[s].size)
			if matchrules.Distance(ra, p.nodes[s].rating) > p.nodes[s].interval || p.classMask(a, s)&regions == 0 || with > 2*t {
				continue
			}
			if p.heads.place(&sub, &cur, int(p.nodes[s].size)); p.heads.empty(&sub) {
				continue
			}
			if with == 2*t { // it fills the match alone
				if p.heads.complete(&sub) {
					p.place(s)
					cur, total = sub, with
				}
				continue
			}
		}
		o, after := p.opponent(a, s, &sub, with, regions&p.classMask(a, s))
		if o < 0 {
			if s == a {
				break // the anchor found no opponent
			}
			continue
		}
		if s != a {
			p.place(s)
		}
		p.place(o)
		p.touched = append(p.touched, o)
		cur, total = after, with+int(p.nodes[o].size)
		regions &= p.classMask(a, s) & p.classMask(a, o)
		s = -1
	}
	// makeMatch takes the match's tickets (marks them matched) or, turning the match down,
	// leaves them placed: then every ticket touched is set back.
	ok := total == 2*t && p.makeMatch(p.chosen)
	for _, pos := range p.touched {
		if ok && p.nodes[pos].state == matched {
			continue
		}
		p.nodes[pos].state = waiting
		p.oldest.set(int(pos), p.nodes[pos].rank)
	}
	return ok
}

// place takes the ticket at pos into the match being built.
func (p *pass) place(pos int32) {
	p.nodes[pos].state = placed
	p.chosen = append(p.chosen, pos)
	p.oldest.set(int(pos), none)
}

// opponent returns the nearest ticket to sub-anchor s, walking outward from it, that is
// waiting, accepts and is accepted by both s and the anchor a, shares a region of regions,
// and fits: placed after the head counts in cur (with players so far) it leaves a state
// from which the teams can still be filled, and completes them if it brings the players to
// 2 x TeamSize. It returns -1 if there is none, else the ticket and the head counts
// after it.
func (p *pass) opponent(a, s int32, cur *headSet, players int, regions uint64) (int32, headSet) {
	ra, iva, rs, ivs := p.nodes[a].rating, p.nodes[a].interval, p.nodes[s].rating, p.nodes[s].interval
	o := p.outward(s)
	for {
		// A side ends at the edge of the anchor's interval as well as of the sub-anchor's.
		dl, dh := math.Inf(1), math.Inf(1)
		if o.left >= 0 && (p.nodes[o.left].rating >= ra || matchrules.Distance(ra, p.nodes[o.left].rating) <= iva) {
			dl = matchrules.Distance(rs, p.nodes[o.left].rating)
		}
		if o.right >= 0 && (p.nodes[o.right].rating <= ra || matchrules.Distance(ra, p.nodes[o.right].rating) <= iva) {
			dh = matchrules.Distance(rs, p.nodes[o.right].rating)
		}
		if dl > ivs && dh > ivs {
			return -1, headSet{}
		}
		c, d := o.step(p, dl, dh)
		if p.nodes[c].state != waiting || d > p.nodes[c].interval || p.classMask(a, c)&regions == 0 {
			continue
		}
		if da := matchrules.Distance(ra, p.nodes[c].rating); da > iva || da > p.nodes[c].interval {
			continue
		}
		n := players + int(p.nodes[c].size)
		if n > 2*p.teamSize {
			continue
		}
		var after headSet
		p.heads.place(&after, cur, int(p.nodes[c].size))
		if p.heads.empty(&after) || n == 2*p.teamSize && !p.heads.complete(&after) {
			continue
		}
		return c, after
	}
}

// classMask is the classes of anchor a that the ticket at c is in: its regions without
// rules (the anchor's classes are the regions), else as classesOf says.
func (p *pass) classMask(a, c int32) uint64 {
	if !p.hasRules {
		return p.nodes[c].regions
	}
	m, _ := p.classesOf(a, c, p.nodes[c].regions&p.nodes[a].regions)
	return m
}
