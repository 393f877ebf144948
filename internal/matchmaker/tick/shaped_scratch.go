package tick

import "sync"

// shapedScratch is the arrays of a shaped pass that its Result does not keep, kept from one
// pass to the next, as the two-team pass's are: the queue service runs a pass of the same
// queue every tick, and a pass of 100,000 tickets fills about 18 MB of them. (The matches'
// arenas are the caller's: not kept.)
type shapedScratch struct {
	live                []sticket
	nodes               []walkNode
	byAge, order, count []int32
	means               []float64
	done                []bool
	kept                []int
	rules               []ruleArrays
	// read's and relay's, which swap them
	ratings, ratings2         []float64
	playerRoles, playerRoles2 [][]uint8
}

// ruleArrays are a shapeRule's arrays by live index.
type ruleArrays struct {
	bound    []bool
	id       []int32
	list     [][]int32
	set      []uint64
	num, tol []float64
}

var shapedScratches = &sync.Pool{New: func() any { return new(shapedScratch) }}

// keep takes back the pass's arrays for the next pass and pools them. The pass must not be
// used after.
func (s *shaper) keep() {
	sc := s.scratch
	sc.live, sc.nodes, sc.byAge = s.live[:0], s.nodes[:0], s.byAge[:0]
	sc.rules = resize(sc.rules, len(s.rules))
	for k := range s.rules {
		d := &s.rules[k]
		sc.rules[k] = ruleArrays{bound: d.bound, id: d.id, list: d.list, set: d.set, num: d.num, tol: d.tol}
	}
	s.scratch = nil
	shapedScratches.Put(sc)
}

// reuse is buf with length 0 and room for n, its array when it is large enough.
func reuse[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, 0, n)
	}
	return buf[:0]
}
