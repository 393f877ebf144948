package shaped

import (
	"sync"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
)

// passBuffers is the arrays of a shaped pass that its Result does not keep, kept from one
// pass to the next, as the two-team pass's are: the queue service runs a pass of the same
// queue every tick, and a large pass fills megabytes of them. (The matches' arenas are the
// caller's: not kept.)
type passBuffers struct {
	sweeps              []sweepArrays // read's, a sweep's each; the first's hold the joined values
	live                []sticket     // every sweep's tickets, then the joined ones
	sorted              []sticket     // and the same in link's order
	kept                []int
	nodes               []walkNode
	byAge, order, count []int32
	means               []float64
	doneRules           []bool
	spareRules          []ruleArrays // link's: the rules' arrays are gathered into these
	lists               [][]int32    // endRules's
	forks               []forkArrays
	sort                pairing.SortBuffers
}

// ruleArrays are a shapeRule's arrays by live index, as a sweep reads them.
type ruleArrays struct {
	bound             []bool
	valueID           []int32
	listSet           []uint64
	number, tolerance []float64
}

var passBufferPool = &sync.Pool{New: func() any { return new(passBuffers) }}

// keep takes back the pass's arrays for the next pass and pools them. The pass must not be
// used after.
func (s *shaper) keep() {
	sc := s.buffers
	sc.nodes, sc.byAge = s.nodes[:0], s.byAge[:0] // the sweeps' arrays are kept by joinSweeps
	for k := range s.rules {
		if d := &s.rules[k]; d.list != nil {
			sc.lists = d.list[:0]
		}
	}
	s.buffers = nil
	passBufferPool.Put(sc)
}
