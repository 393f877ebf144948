package shaped

import (
	"cmp"
	"runtime"
	"slices"
	"sync"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
)

// link orders the live tickets by (partition value, mean rating, age) and links each to its
// neighbours of the same partition value.
func (s *shaper) link() {
	// A large pass counts the roles on another core while this one sorts (both only read
	// the tickets), then moves the rules' values and half the tickets there while this one
	// moves the other half, so that a walk reads neighbours in memory. The tickets are
	// gathered into an array of their own: in place, following the cycles of the order,
	// their move was the pass's longest step on one core.
	var wg sync.WaitGroup
	beside := func(f func()) { f() }
	if len(s.live) >= parallelMin && runtime.GOMAXPROCS(0) > 1 {
		beside = wg.Go
	}
	beside(s.countAllRoles)
	order, aged := s.order()
	wg.Wait()
	sc := s.buffers
	sorted := scratch.Resize(sc.sorted, len(s.live))
	sc.sorted = sorted
	half := len(order) / 2
	beside(func() {
		s.moveRules(order)
		gatherInto(sorted[:half], s.live, order[:half])
	})
	gatherInto(sorted[half:], s.live, order[half:])
	wg.Wait()
	s.live = sorted
	s.nodes = scratch.Resize(s.buffers.nodes, len(s.live))
	for k := range s.live {
		x := &s.live[k]
		s.nodes[k] = walkNode{mean: x.mean, interval: x.interval, prev: -1, next: -1, fillType: x.fillType, size: int32(x.size)}
		if k > 0 && s.partOf(int32(k-1)) == s.partOf(int32(k)) {
			s.nodes[k].prev, s.nodes[k-1].next = int32(k-1), int32(k)
		}
	}
	// Age order: the live tickets were read in input order, which the queue service keeps
	// by age; only when it is not are they sorted.
	s.byAge = scratch.Resize(s.buffers.byAge, len(s.live))
	for k, i := range order {
		s.byAge[i] = int32(k)
	}
	if !aged {
		slices.SortStableFunc(s.byAge, func(a, b int32) int { return cmp.Compare(s.live[a].since, s.live[b].since) })
	}
}

// moveRules puts the rules' arrays in the order of order. Each is gathered into a spare
// array, which is then the array the first sweep reads the next pass into: a gather reads
// at random and writes in order, where following the cycles in place did both at random.
func (s *shaper) moveRules(order []int32) {
	sc := s.buffers
	sc.spareRules = scratch.Resize(sc.spareRules, len(s.rules))
	for k := range s.rules {
		d, spare := &s.rules[k], &sc.spareRules[k]
		d.bound, spare.bound = gather(d.bound, spare.bound, order)
		d.valueID, spare.valueID = gather(d.valueID, spare.valueID, order)
		d.listSet, spare.listSet = gather(d.listSet, spare.listSet, order)
		d.number, spare.number = gather(d.number, spare.number, order)
		d.tolerance, spare.tolerance = gather(d.tolerance, spare.tolerance, order)
		sc.sweeps[0].rules[k] = ruleArrays{bound: d.bound[:0], valueID: d.valueID[:0], listSet: d.listSet[:0], number: d.number[:0], tolerance: d.tolerance[:0]}
		if d.list != nil { // more than 64 values: rare
			sc.doneRules = scratch.Resize(sc.doneRules, len(order))
			permuteInPlace(d.list, order, sc.doneRules)
		}
	}
}

// gather returns xs in the order of order (out[k] is xs[order[k]]) in spare's array, and
// xs's array as the next spare. Nil stays nil.
func gather[T any](xs, spare []T, order []int32) (out, next []T) {
	if xs == nil {
		return nil, spare
	}
	out = scratch.Resize(spare, len(xs))
	gatherInto(out, xs, order)
	return out, xs[:0]
}

// gatherInto sets out[k] to xs[order[k]] for each k of order.
func gatherInto[T any](out, xs []T, order []int32) {
	for k, i := range order {
		out[k] = xs[i]
	}
}

// countAllRoles counts the searching players of each role, by partition (countRoles).
func (s *shaper) countAllRoles() {
	if s.roleMins == nil {
		return
	}
	s.searchingByRole = make([][]int32, s.partitions())
	for p := range s.searchingByRole {
		s.searchingByRole[p] = make([]int32, len(s.roles))
	}
	for i := range s.live {
		s.countRoles(int32(i), 1)
	}
}

// order is the live indices sorted by (partition value, mean rating, age, index), and
// whether the tickets came in age order. The queue service keeps its tickets so: then the
// order is the ratings' radix sort (pairing.SortIndex, ties by index, so by age) made
// stable by partition value, a few passes over the tickets rather than a comparison sort.
func (s *shaper) order() (order []int32, aged bool) {
	n := len(s.live)
	sc := s.buffers
	order = scratch.Resize(sc.order, n)
	sc.order = order
	aged = true
	for i := 1; i < n && aged; i++ {
		aged = s.live[i-1].since <= s.live[i].since
	}
	if !aged {
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int {
			x, y := &s.live[a], &s.live[b]
			return cmp.Or(cmp.Compare(s.partOf(a), s.partOf(b)), cmp.Compare(x.mean, y.mean),
				cmp.Compare(x.since, y.since), cmp.Compare(a, b))
		})
		return order, aged
	}
	means := scratch.Resize(sc.means, n)
	sc.means = means
	for i := range s.live {
		means[i] = s.live[i].mean
	}
	sc.sort.SortIndex(means, order)
	if s.partitionRule < 0 {
		return order, aged
	}
	// A counting sort by partition value, stable.
	d := &s.rules[s.partitionRule]
	start := make([]int32, len(d.names)+len(d.nums)+1)
	for _, id := range d.valueID {
		start[id+1]++
	}
	for v := 1; v < len(start); v++ {
		start[v] += start[v-1]
	}
	out := scratch.Resize(sc.count, n)
	for _, i := range order {
		v := d.valueID[i]
		out[start[v]] = i
		start[v]++
	}
	sc.order, sc.count = out, order // the next pass sorts into either
	return out, aged
}

// permuteInPlace puts xs in the order of order (xs[k] becomes the old xs[order[k]]) by
// following its cycles (done: scratch of len(order), or more, cleared here), for an array
// without a spare to gather into. Nil stays nil.
func permuteInPlace[T any](xs []T, order []int32, done []bool) {
	if xs == nil {
		return
	}
	done = done[:len(xs)]
	clear(done)
	for k := range xs {
		if done[k] {
			continue
		}
		first := xs[k]
		j := k
		for {
			done[j] = true
			src := int(order[j])
			if src == k {
				xs[j] = first
				break
			}
			xs[j] = xs[src]
			j = src
		}
	}
}
