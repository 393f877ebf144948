package shaped

import (
	"cmp"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Run is tick.Run for a config with a Shape, which tick.Run has checked with now: any number of teams, each of its own size,
// minimum size and role composition.
//
// Each live ticket, oldest first, anchors a search as in the two-team pass: the candidates
// acceptable to it (mutual interval, a common region within every limit, its value of each
// equal rule binding both, a list sharing min_common values for each intersect rule, a
// distance rule's values within the smaller tolerance) are taken nearest in rating first,
// each one kept when the group can still fill the shape with it: the rules hold among all
// the tickets each binds, the parties pack into the teams, and the players' roles can meet
// the compositions. A group as large as the shape is split into teams (split.go); a split
// that breaks team_balance or party_mix drops the last ticket taken and the walk goes on.
// When the walk ends short, a group that reaches every team's current minimum size (the
// anchor's wait on MinSize) is split the same way, its teams short of their size by their
// OpenSlots. An anchor with at most fallbackCandidates acceptable candidates that the walk
// did not serve is searched exhaustively, so on small queues a match is missed only when
// none exists; larger ones may wait where some other choice of candidates would have made a
// match (their walk keeps the nearest in rating).
func Run(tickets []matchpool.Ticket, now float64, cfg *matchrules.Config) (matchpool.Result, error) {
	var f apperr.Fields
	s := &shaper{cfg: cfg, now: now, in: tickets, scratch: shapedScratches.Get().(*shapedScratch)}
	defer s.keep()
	s.split.info = newShapeInfo(cfg)
	s.fill = newFillSpace(cfg, &s.split.info)
	s.read(&f)
	if err := f.Err(); err != nil {
		return matchpool.Result{}, err
	}
	s.aggregateRoles()
	s.link()
	s.serveAll()
	return s.result(), nil
}

// parallelMin is the fewest live tickets whose partitions a pass serves in parallel.
var parallelMin = 4096

// serveAll serves every anchor, oldest first. The anchors of different partitions (values
// of s.part) never share a match nor a ticket: with more than one core, each goroutine
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
	sc := s.scratch
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
			s.rank = int32(r)
			s.serve(a)
		}
	}
}

// serveRanked serves the anchors at the places ranks (ascending) of byAge.
func (s *shaper) serveRanked(ranks []int32) {
	for _, r := range ranks {
		if a := s.byAge[r]; !s.live[a].taken {
			s.rank = r
			s.serve(a)
		}
	}
}

// fork is a copy of the pass for a goroutine that serves some of its partitions: the same
// tickets, a walkState of its own.
func (s *shaper) fork() *shaper {
	w := new(shaper)
	*w = *s
	w.walkState = walkState{split: splitState{info: s.split.info}}
	return w
}

// join collects the forks' matches and waits in the order of their anchors' places, the
// matches on another core: the result's array of matches is new memory, whose pages its
// first writes fault in (a 100,000-ticket pass copies 14,000 matches).
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
// over the entries where a sort of them took a tenth of a 100,000-ticket pass, alone on one
// core. Past maxMergedRuns runs they are sorted instead.
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

// fallbackCandidates is the most acceptable candidates an unserved anchor is searched
// exhaustively among (every subset, nearest first, within fallbackNodes steps).
const (
	fallbackCandidates = 14
	fallbackNodes      = 1 << 15
	maxTurnDowns       = 8 // splits a rule may turn down before an anchor gives up
	// maxWalk bounds the candidates an anchor's walk looks at: in a large queue an anchor
	// that cannot match (a role nobody plays with it) would otherwise walk its whole
	// interval at every tick.
	maxWalk = 256
	// maxStall ends a walk whose group took none of its last maxStall candidates: what
	// it lacks (a role, a party size) is not near the anchor.
	maxStall = 96
)

// shaper is one shaped pass.
type shaper struct {
	cfg     *matchrules.Config
	scratch *shapedScratch // the arrays of an earlier pass, reused
	now     float64
	in      []matchpool.Ticket
	// the live tickets' players' ratings, in input order: makeMatch reads them here rather
	// than from the tickets, a cache miss or two each; and, with roles, their role lists
	ratings     []float64
	playerRoles []matchrules.RoleList
	latency     bool
	regions     []string // sorted; a region's id is its index
	roles       []string
	rules       []shapeRule
	// the rules a match reports its attributes by: the equal and intersect ones
	reported []int
	part     int // the rule whose value partitions the walks, -1: none

	live  []sticket
	byAge []int32 // live indices, oldest first
	// the walks' links, by live index: what nearer reads of each ticket it passes, two to a
	// cache line where a sticket takes two lines
	nodes []walkNode

	expired []matchpool.Expiry

	// the compositions of every team together, for a walk's check (nil: none)
	roleLo, roleHi []int
	roleLoSum      int
	roleCount      [][]int32            // by partition value, by role: the searching players who play it
	kept           []int                // the live tickets' input indices
	listIDs        scratch.Arena[int32] // the intersect rules' lists of more than 64 values, as value ids
	// with few enough states, the exact check of a group's seats and roles (shaped_fill.go)
	fill  *fillSpace
	types fillTypes // the tickets' types (sticket.fillType)

	players int  // the shape's players, Σ sizes (capacity)
	joined  bool // waits holds the forks' waits of the tickets still waiting (join)
	touched int  // touch's sum, kept so that the reads are not dropped

	walkState
}

// walkState is what serving anchors changes besides the tickets (their taken flags, links
// and role counts): the matches and waits found, and the buffers of the walks. The anchors
// of different partitions are served in parallel (serveAll), each goroutine with a
// walkState of its own.
type walkState struct {
	matches   []matchpool.Match
	matchRank []int32 // each match's anchor's place in byAge
	// in a fork, where each partition's matches and waits start (join merges these runs)
	matchRuns, waitRuns []int32
	waits               []matchpool.Wait
	waitOf              []int32 // the live index of each wait's ticket
	waitRank            []int32 // and its place in byAge
	rank                int32   // the anchor's being served

	split     splitState
	roleOut   []int8
	sizesBuf  []int
	roomBuf   []int
	walkGroup group
	// the exhaustive search's groups, by depth
	searchGroups []*group
	// the matches' parts, cut from arrays shared by many matches
	ints    scratch.Arena[int]
	stages  stageCount
	teams   scratch.Arena[matchpool.Team]
	slots   scratch.Arena[matchpool.Slot]
	names   scratch.Arena[string]
	attrs   scratch.Arena[matchpool.MatchAttribute]
	keptBuf []int32
	fillBuf []uint64
	// a match's players' roles, by member from roleAt[member] (makeMatch)
	matchRoles []int8
	roleAt     []int

	// scratch of one anchor
	mins      []int
	cands     []int32        // its acceptable candidates, nearest first, up to fallbackCandidates+1
	turned    matchpool.Wait // the first split a rule turned down
	turnDowns int
}

// sticket is a live ticket of a shaped pass.
type sticket struct {
	// What a walk reads of each candidate comes first, in one cache line.
	mean, iv float64
	mask     uint64 // regions it accepts now
	fillType int32  // with a fill space, its type: the tickets of one type seat alike (canSeat)
	ratings  int32  // where its players' ratings start in shaper.ratings
	since    float64
	total    float64
	size     int
	in       int32
	taken    bool
	// a solo's roles in its order (a party's are in shaper.playerRoles, from ratings): in
	// the sticket, which a split reads anyway, where a list in the sweeps' arrays, in input
	// order, cost a cache miss a ticket to name the roles of each match (shaper.rolesOf)
	solo    [1]matchrules.RoleList
	roleSig uint64 // the roles its players play, as a set of sets: equal for equal tickets
}

// rolesOf is x's players' role lists, in their order (nil when the queue has no roles).
func (s *shaper) rolesOf(x *sticket) []matchrules.RoleList {
	switch {
	case s.playerRoles == nil:
		return nil
	case x.size == 1:
		return x.solo[:]
	}
	return s.playerRoles[x.ratings : int(x.ratings)+x.size : int(x.ratings)+x.size]
}

// walkNode is what a walk reads of a live ticket it passes: a candidate the rules turn
// away costs a read of its node (two to a cache line) and of the rules' arrays, not of its
// sticket.
type walkNode struct {
	mean, iv   float64
	prev, next int32 // unmatched neighbours in rating, in its partition
	fillType   int32 // sticket's
	size       int32
}

// walkKind is a rule's kind as the walk tells them apart (a number, not the kind's name).
type walkKind uint8

const (
	walkOther walkKind = iota // judged on the match, not by the walk
	walkEqual
	walkIntersect
	walkDistance
)

var walkKinds = map[string]walkKind{matchrules.RuleEqual: walkEqual, matchrules.RuleIntersect: walkIntersect, matchrules.RuleDistance: walkDistance}

// shapeRule is what the pass reads of one rule, by live index.
type shapeRule struct {
	rule   *matchrules.Rule
	always bool // binds every ticket (no OptionalAfterS): bound is all true
	// Its kind and, for intersect, the values a match's lists must share: the walk reads
	// them at every step.
	kind      walkKind
	minCommon int
	bound     []bool
	id        []int32   // equal: the value's id
	list      [][]int32 // intersect with more than 64 values: value ids, ascending
	set       []uint64  // intersect with at most 64 values (bits): the list as bits
	bits      bool
	num       []float64 // distance
	tol       []float64 // distance, team_balance
	names     []string  // equal (strings), intersect: by id
	byName    []int32   // intersect with bits: the ids in the order of their names
	nums      []float64 // equal (numbers): by id
}

// take removes a ticket from the walks: matched.
func (s *shaper) take(i int32) {
	x := &s.live[i]
	x.taken = true
	s.countRoles(i, -1)
	if n := &s.nodes[i]; n.prev >= 0 {
		s.nodes[n.prev].next = n.next
	}
	if n := &s.nodes[i]; n.next >= 0 {
		s.nodes[n.next].prev = n.prev
	}
}

// result copies out the waits of the tickets still waiting.
func (s *shaper) result() matchpool.Result {
	r := matchpool.Result{Expired: s.expired}
	if len(s.matches) > 0 { // nil without matches, as before the capacity was made up front
		r.Matches = s.matches
	}
	if s.joined {
		r.Waiting = s.waits
		return r
	}
	for k, w := range s.waits {
		if !s.live[s.waitOf[k]].taken {
			r.Waiting = append(r.Waiting, w)
		}
	}
	return r
}

// region returns the region of mask (regions every ticket accepts) with the smallest worst
// latency of the group's tickets, "" when none of them has latency data.
func (s *shaper) region(group []int32, mask uint64) string {
	if !s.latency || len(s.regions) == 0 {
		return ""
	}
	var worst [matchpool.MaxRegions]float64
	data := false
	for _, i := range group {
		for _, l := range s.in[s.live[i].in].Latencies {
			r, _ := slices.BinarySearch(s.regions, l.Region)
			worst[r] = max(worst[r], l.MS)
			data = true
		}
	}
	if !data {
		return ""
	}
	best, bw := -1, math.Inf(1)
	for m := mask; m != 0; m &= m - 1 {
		r := bits.TrailingZeros64(m)
		if r >= len(s.regions) {
			break
		}
		if worst[r] < bw {
			best, bw = r, worst[r]
		}
	}
	if best < 0 {
		return ""
	}
	return s.regions[best]
}

// minSizes are the shape's current minimum team sizes at the anchor's wait, and their sum.
func (s *shaper) minSizes(wait float64, out []int) ([]int, int) {
	out, sum := out[:0], 0
	for _, d := range s.cfg.Shape {
		n := d.Size
		if len(d.MinSize) > 0 {
			v := d.MinSize[0].Value
			for _, st := range d.MinSize[1:] {
				if st.AfterS > wait {
					break
				}
				v = st.Value
			}
			n = int(v)
		}
		out = append(out, n)
		sum += n
	}
	return out, sum
}

func (s *shaper) capacity() int {
	if s.players == 0 {
		for _, d := range s.cfg.Shape {
			s.players += d.Size
		}
	}
	return s.players
}

// addWait records why anchor a waits.
func (s *shaper) addWait(a int32, w matchpool.Wait) {
	w.Ticket = int(s.live[a].in)
	s.waits = append(s.waits, w)
	s.waitOf = append(s.waitOf, a)
	s.waitRank = append(s.waitRank, s.rank)
}

// aggregateRoles sums the teams' compositions, for the walk's check of a group's roles.
func (s *shaper) aggregateRoles() {
	in := &s.split.info
	if !slices.Contains(in.comp, true) {
		return
	}
	s.roleLo, s.roleHi = make([]int, len(s.roles)), make([]int, len(s.roles))
	for k := range in.sizes {
		for r := range s.roles {
			if in.comp[k] {
				s.roleLo[r] += in.lo[k][r]
				s.roleHi[r] += in.hi[k][r]
			} else {
				s.roleHi[r] += in.sizes[k]
			}
		}
		s.roleLoSum += in.loSum[k]
	}
}

// roleSignature is a ticket's players' role sets, sorted, packed in one word (a hash
// beyond four players).
func roleSignature(roles []matchrules.RoleList) uint64 {
	var masks [matchrules.MaxTeamSize]uint64
	for j := range roles {
		m := uint64(1)<<matchrules.MaxRoles - 1 // any
		if rs := roles[j].Roles(); len(rs) > 0 {
			m = 0
			for _, r := range rs {
				m |= 1 << r
			}
		}
		masks[j] = m
	}
	ms := masks[:len(roles)]
	slices.Sort(ms)
	sig := uint64(len(ms))
	for _, m := range ms {
		sig = sig*0x100000001b3 ^ m
	}
	return sig
}

// partitions is the number of values of the partitioning rule (1 without one).
func (s *shaper) partitions() int {
	if s.part < 0 {
		return 1
	}
	return len(s.rules[s.part].names) + len(s.rules[s.part].nums)
}

// partOf is ticket i's value of the partitioning rule (0 without one).
func (s *shaper) partOf(i int32) int32 {
	if s.part < 0 {
		return 0
	}
	return s.rules[s.part].id[i]
}
