package shaped

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
)

// parallelMin is the fewest live tickets whose partitions a pass serves in parallel.
var parallelMin = 4096

// serveAll serves every anchor, oldest first. The anchors of different partitions (values
// of s.partitionRule) never share a match nor a ticket: with more than one core, each goroutine
// serves whole partitions, each oldest first, and the matches and waits are then put in the
// order of their anchors, as one goroutine would have found them.
func (s *shaper) serveAll() {
	s.capacity() // set before the goroutines read it
	parts := s.partitions()
	workers := min(runtime.GOMAXPROCS(0), parts)
	if workers < 2 || len(s.live) < parallelMin {
		s.serveRanks(s.byAge, 0, len(s.byAge))
		return
	}
	// Each partition's places in byAge, oldest first, from one array.
	start := make([]int, parts+1)
	for _, a := range s.byAge {
		start[s.partOf(a)+1]++
	}
	for p := range parts {
		start[p+1] += start[p]
	}
	ranks := make([]int32, len(s.byAge))
	fill := slices.Clone(start[:parts])
	for r, a := range s.byAge {
		p := s.partOf(a)
		ranks[fill[p]] = int32(r)
		fill[p]++
	}
	bySize := make([]int, parts) // the largest partitions first: the last ones left are short
	for p := range bySize {
		bySize[p] = p
	}
	slices.SortFunc(bySize, func(a, b int) int { return cmp.Compare(start[b+1]-start[b], start[a+1]-start[a]) })
	players := 0
	for i := range s.live {
		players += s.live[i].size
	}
	share := (players/s.capacity()+1)/workers + 64 // a fork's matches, about: few appends copy them
	var next atomic.Int32
	forks := make([]*shaper, workers)
	sc := s.buffers
	sc.forks = scratch.Resize(sc.forks, workers)
	var wg sync.WaitGroup
	for k := range forks {
		w := s.fork()
		w.walkState.keptFrom(&sc.forks[k], share)
		forks[k] = w
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= parts {
					return
				}
				p := bySize[n]
				// A partition's anchors are served in rank order: its matches and waits
				// are a run sorted by rank, which join merges with the others.
				w.matchRuns, w.waitRuns = append(w.matchRuns, int32(len(w.matchRank))), append(w.waitRuns, int32(len(w.waitRank)))
				w.serveRanked(ranks[start[p]:start[p+1]])
			}
		})
	}
	wg.Wait()
	s.join(forks)
	for k, w := range forks {
		sc.forks[k].keep(&w.walkState)
	}
}

// serveRanks serves the anchors of byAge[from:to] (in that order), the oldest first.
func (s *shaper) serveRanks(byAge []int32, from, to int) {
	if s.matches == nil {
		players := 0
		for _, a := range byAge[from:to] {
			players += s.live[a].size
		}
		s.matches = make([]matchpool.Match, 0, players/s.capacity()+1) // at most: no append copies them
	}
	for r := from; r < to; r++ {
		if a := byAge[r]; !s.live[a].taken {
			s.anchorRank = int32(r)
			s.serve(a)
		}
	}
}

// serveRanked serves the anchors at the places ranks (ascending) of byAge.
func (s *shaper) serveRanked(ranks []int32) {
	for _, r := range ranks {
		if a := s.byAge[r]; !s.live[a].taken {
			s.anchorRank = r
			s.serve(a)
		}
	}
}

// fork is a copy of the pass for a goroutine that serves some of its partitions: the same
// tickets, a walkState of its own.
func (s *shaper) fork() *shaper {
	w := new(shaper)
	*w = *s
	w.walkState = walkState{split: splitState{shape: s.split.shape}}
	return w
}

// join collects the forks' matches and waits in the order of their anchors' places, the
// matches on another core: the result's array of matches is new memory, whose pages its
// first writes fault in (a large pass copies thousands of matches).
func (s *shaper) join(forks []*shaper) {
	nm, nw := 0, 0
	for _, w := range forks {
		nm, nw = nm+len(w.matchRank), nw+len(w.waitRank)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		s.matches = make([]matchpool.Match, 0, nm)
		mergeRuns(forks, func(w *shaper) ([]int32, []int32) { return w.matchRank, w.matchRuns }, func(k, i int32) {
			s.matches = append(s.matches, forks[k].matches[i])
		})
	})
	// The result's waits, of the tickets still waiting: every fork is done, the taken
	// flags are final.
	s.joined = true
	if nw > 0 { // nil when none waits, as the sequential pass leaves it
		s.waits = make([]matchpool.Wait, 0, nw)
	}
	mergeRuns(forks, func(w *shaper) ([]int32, []int32) { return w.waitRank, w.waitRuns }, func(k, i int32) {
		if f := forks[k]; !s.live[f.waitOf[i]].taken {
			s.waits = append(s.waits, f.waits[i])
		}
	})
	wg.Wait()
}

// mergeRuns calls emit with each fork's entries (of, per fork, their ranks and where each run
// of ascending ranks starts) in the order of their ranks: a merge of the runs, a few passes
// over the entries where a sort of them all was a large part of a pass on one core. Past
// maxMergedRuns runs they are sorted instead.
func mergeRuns(forks []*shaper, of func(*shaper) (ranks, starts []int32), emit func(fork, i int32)) {
	type run struct {
		ranks        []int32 // the fork's
		fork, at, to int32
	}
	var runs []run
	for k, w := range forks {
		ranks, starts := of(w)
		for j, from := range starts {
			to := int32(len(ranks))
			if j+1 < len(starts) {
				to = starts[j+1]
			}
			if from < to {
				runs = append(runs, run{ranks, int32(k), from, to})
			}
		}
	}
	if len(runs) > maxMergedRuns {
		type entry struct{ rank, fork, i int32 }
		var all []entry
		for _, r := range runs {
			for i := r.at; i < r.to; i++ {
				all = append(all, entry{r.ranks[i], r.fork, i})
			}
		}
		slices.SortFunc(all, func(a, b entry) int { return cmp.Compare(a.rank, b.rank) })
		for _, e := range all {
			emit(e.fork, e.i)
		}
		return
	}
	for {
		best := -1
		for j, r := range runs {
			if r.at < r.to && (best < 0 || r.ranks[r.at] < runs[best].ranks[runs[best].at]) {
				best = j
			}
		}
		if best < 0 {
			return
		}
		emit(runs[best].fork, runs[best].at)
		runs[best].at++
	}
}

// maxMergedRuns is the most runs join merges; more are sorted.
const maxMergedRuns = 16

// forkArrays are a fork's arrays of matches and waits, kept from one pass to the next
// (join copies what the result keeps).
type forkArrays struct {
	matches                     []matchpool.Match
	waits                       []matchpool.Wait
	matchRank, waitOf, waitRank []int32
}

// keptFrom starts the walk's arrays from a's, with room for about matches matches.
func (w *walkState) keptFrom(a *forkArrays, matches int) {
	w.matches = scratch.Reuse(a.matches, matches)
	w.waits, w.matchRank, w.waitOf, w.waitRank = a.waits[:0], a.matchRank[:0], a.waitOf[:0], a.waitRank[:0]
}

// keep takes back the walk's arrays, cleared of what the result holds (a match's slices,
// a wait's strings) so that the pool does not keep the result alive.
func (a *forkArrays) keep(w *walkState) {
	clear(w.matches)
	clear(w.waits)
	a.matches, a.waits = w.matches[:0], w.waits[:0]
	a.matchRank, a.waitOf, a.waitRank = w.matchRank[:0], w.waitOf[:0], w.waitRank[:0]
}
