package twoteam

import "github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"

// heads is a set of head counts (x, y): x players on the anchor's team and y on the other,
// both 0..t, as bit x*(t+1)+y. (t+1)^2 is at most 289 bits; a pass uses the first words of
// them, one word up to teams of 7, so a ticket is placed on either team of every state at
// once with a few shifts.
type headSet [5]uint64

// headSpace is the geometry of heads for one team size.
type headSpace struct {
	teamSize, stride, words int
	all                     headSet                             // every (x, y)
	yFrom                   [matchrules.MaxTeamSize + 1]headSet // yFrom[s]: the (x, y) with y >= s
	yTo                     [matchrules.MaxTeamSize + 1]headSet // yTo[s]: the (x, y) with y <= t-s
	full                    struct{ word, bit uint }            // (t, t)
}

func (hs *headSpace) init(t int) {
	*hs = headSpace{teamSize: t, stride: t + 1, words: ((t+1)*(t+1) + 63) / 64}
	for x := 0; x <= t; x++ {
		for y := 0; y <= t; y++ {
			b := x*hs.stride + y
			hs.all[b/64] |= 1 << (b % 64)
			for s := 0; s <= t; s++ {
				if y >= s {
					hs.yFrom[s][b/64] |= 1 << (b % 64)
				}
				if y <= t-s {
					hs.yTo[s][b/64] |= 1 << (b % 64)
				}
			}
		}
	}
	b := t*hs.stride + t
	hs.full.word, hs.full.bit = uint(b/64), uint(b%64)
}

// one is the set holding (x, 0) alone: the anchor's ticket of x players on its team.
func (hs *headSpace) one(x int) (h headSet) {
	b := x * hs.stride
	h[b/64] = 1 << (b % 64)
	return h
}

// target is the set holding (t, t) alone: two full teams.
func (hs *headSpace) target() (h headSet) {
	h[hs.full.word] = 1 << hs.full.bit
	return h
}

// complete reports whether d holds (t, t).
func (hs *headSpace) complete(d *headSet) bool { return d[hs.full.word]>>hs.full.bit&1 != 0 }

func (hs *headSpace) empty(d *headSet) bool {
	for i := range hs.words {
		if d[i] != 0 {
			return false
		}
	}
	return true
}

// place sets r to the states reached from d by a ticket of s players on either team.
func (hs *headSpace) place(r, d *headSet, s int) {
	if hs.words == 1 { // teams of up to 7
		r[0] = d[0]<<s&hs.yFrom[s][0] | d[0]<<(s*hs.stride)&hs.all[0]
		return
	}
	y, x := hs.shl(d, s), hs.shl(d, s*hs.stride)
	for i := range hs.words {
		r[i] = y[i]&hs.yFrom[s][i] | x[i]&hs.all[i]
	}
}

// add places a ticket of s players on either team in every state of d, keeping d's states
// (the ticket may also stay out).
func (hs *headSpace) add(d *headSet, s int) {
	if hs.words == 1 {
		d[0] |= d[0]<<s&hs.yFrom[s][0] | d[0]<<(s*hs.stride)&hs.all[0]
		return
	}
	var r headSet
	hs.place(&r, d, s)
	for i := range hs.words {
		d[i] |= r[i]
	}
}

// unplace sets r to the states from which a ticket of s players on either team reaches
// one of d.
func (hs *headSpace) unplace(r, d *headSet, s int) {
	if hs.words == 1 {
		r[0] = d[0]>>s&hs.yTo[s][0] | d[0]>>(s*hs.stride)
		return
	}
	y, x := hs.shr(d, s), hs.shr(d, s*hs.stride)
	for i := range hs.words {
		r[i] = y[i]&hs.yTo[s][i] | x[i]
	}
}

// shl shifts the first words of d left by k bits.
func (hs *headSpace) shl(d *headSet, k int) (r headSet) {
	q, b := k/64, uint(k%64)
	for i := hs.words - 1; i >= q; i-- {
		r[i] = d[i-q] << b
		if b != 0 && i > q {
			r[i] |= d[i-q-1] >> (64 - b)
		}
	}
	return r
}

// shr shifts the first words of d right by k bits.
func (hs *headSpace) shr(d *headSet, k int) (r headSet) {
	q, b := k/64, uint(k%64)
	for i := 0; i+q < hs.words; i++ {
		r[i] = d[i+q] >> b
		if b != 0 && i+q+1 < hs.words {
			r[i] |= d[i+q+1] << (64 - b)
		}
	}
	return r
}
