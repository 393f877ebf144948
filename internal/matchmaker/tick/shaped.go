package tick

import (
	"cmp"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// runShaped is Run for a config with a Shape: any number of teams, each of its own size,
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
func runShaped(tickets []Ticket, now float64, cfg *Config) (Result, error) {
	var f apperr.Fields
	s := &shaper{cfg: cfg, now: now, in: tickets, scratch: shapedScratches.Get().(*shapedScratch)}
	defer s.keep()
	s.split.info = newShapeInfo(cfg)
	s.fill = newFillSpace(cfg, &s.split.info)
	s.read(&f)
	if err := f.Err(); err != nil {
		return Result{}, err
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
	sc.forks = resize(sc.forks, workers)
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
		s.matches = make([]Match, 0, players/s.capacity()+1) // at most: no append copies them
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
		s.matches = make([]Match, 0, nm)
		mergeRuns(forks, func(w *shaper) ([]int32, []int32) { return w.matchRank, w.matchRuns }, func(k, i int32) {
			s.matches = append(s.matches, forks[k].matches[i])
		})
	})
	// The result's waits, of the tickets still waiting: every fork is done, the taken
	// flags are final.
	s.joined = true
	if nw > 0 { // nil when none waits, as the sequential pass leaves it
		s.waits = make([]Wait, 0, nw)
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
	matches                     []Match
	waits                       []Wait
	matchRank, waitOf, waitRank []int32
}

// keptFrom starts the walk's arrays from a's, with room for about matches matches.
func (w *walkState) keptFrom(a *forkArrays, matches int) {
	w.matches = reuse(a.matches, matches)
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
	cfg     *Config
	scratch *shapedScratch // the arrays of an earlier pass, reused
	now     float64
	in      []Ticket
	// the live tickets' players' ratings, in input order: makeMatch reads them here rather
	// than from the tickets, a cache miss or two each; and, with roles, their role lists
	ratings     []float64
	playerRoles []roleList
	latency     bool
	regions     []string // sorted; a region's id is its index
	roles       []string
	rules       []shapeRule
	// the rules a match reports its attributes of: the equal and intersect ones, the first
	// of each attribute
	reported []int
	part     int // the rule whose value partitions the walks, -1: none

	live  []sticket
	byAge []int32 // live indices, oldest first
	// the walks' links, by live index: what nearer reads of each ticket it passes, two to a
	// cache line where a sticket takes two lines
	nodes []walkNode

	expired []Expiry

	// the compositions of every team together, for a walk's check (nil: none)
	roleLo, roleHi []int
	roleLoSum      int
	roleCount      [][]int32    // by partition value, by role: the searching players who play it
	kept           []int        // the live tickets' input indices
	listIDs        arena[int32] // the intersect rules' lists of more than 64 values, as value ids
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
	matches   []Match
	matchRank []int32 // each match's anchor's place in byAge
	// in a fork, where each partition's matches and waits start (join merges these runs)
	matchRuns, waitRuns []int32
	waits               []Wait
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
	ints    arena[int]
	stages  stageCount
	teams   arena[Team]
	slots   arena[Slot]
	names   arena[string]
	attrs   arena[MatchAttribute]
	keptBuf []int32
	fillBuf []uint64
	// a match's players' roles, by member from roleAt[member] (makeMatch)
	matchRoles []int8
	roleAt     []int

	// scratch of one anchor
	mins      []int
	cands     []int32 // its acceptable candidates, nearest first, up to fallbackCandidates+1
	turned    Wait    // the first split a rule turned down
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
	solo    [1]roleList
	roleSig uint64 // the roles its players play, as a set of sets: equal for equal tickets
}

// rolesOf is x's players' role lists, in their order (nil when the queue has no roles).
func (s *shaper) rolesOf(x *sticket) []roleList {
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

var walkKinds = map[string]walkKind{RuleEqual: walkEqual, RuleIntersect: walkIntersect, RuleDistance: walkDistance}

// shapeRule is what the pass reads of one rule, by live index.
type shapeRule struct {
	rule   *Rule
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

// read checks the tickets and reads the live ones, in one sweep: each ticket's attributes
// are looked up once, for the check and the rules (its map is a cache miss or two). A large
// queue is cut into a sweep a core, each over its own part of the tickets, joined after in
// input order.
func (s *shaper) read(f *apperr.Fields) {
	cfg := s.cfg
	s.roles = cfg.Roles
	s.latency = len(cfg.MaxLatency) > 0
	s.startRules()
	parts, workers := 1, 1
	// Sweeps in parallel pay where reading a ticket is heavy (its attribute map, its role
	// lists): without either, a second goroutine cost the free-for-all 8% more CPU.
	if len(s.in) >= parallelMin && (len(cfg.Rules) > 0 || len(cfg.Roles) > 0) {
		workers = runtime.GOMAXPROCS(0)
		parts = min(workers*sweepsPerCore, maxSweeps)
	}
	sweeps := make([]sweep, parts)
	sc := s.scratch
	sc.sweeps = resize(sc.sweeps, parts)
	// Each sweep reads its live tickets into one array at its tickets' own places, which
	// joinSweeps closes the gaps of (the expired ones'): no sweep's array is copied.
	sc.live, sc.kept = resize(sc.live, len(s.in)), resize(sc.kept, len(s.in))
	for k := range sweeps {
		from, to := k*len(s.in)/parts, (k+1)*len(s.in)/parts
		sweeps[k].start(s, &sc.sweeps[k], from, to)
		sweeps[k].live, sweeps[k].kept = sc.live[from:from:to], sc.kept[from:from:to]
	}
	// Each core takes the next sweep left: a core slowed by another machine's work on its
	// host reads fewer of them.
	var next atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := int(next.Add(1)) - 1; k < parts; k = int(next.Add(1)) - 1 {
				sweeps[k].run()
			}
		})
	}
	wg.Wait()
	regions := s.joinSweeps(f, sweeps)
	if regions > MaxRegions {
		f.Add("tickets", "must name at most %d regions in one pass", MaxRegions)
	}
	if f.Len() > 0 {
		return
	}
	slices.Sort(s.regions)
	if s.latency {
		for j := range s.live {
			s.live[j].mask = s.regionMask(&s.in[s.live[j].in])
		}
	}
	s.endRules(sweeps[0].readers, s.kept)
}

// maxSweeps bounds the sweeps read cuts a queue into; sweepsPerCore is how many it cuts a
// queue into for each core.
const (
	maxSweeps     = 8
	sweepsPerCore = 2
)

// sweep is read's work on the tickets in[from:to]: their faults, and the live ones as read,
// with the rules' values numbered by its own interners (join renumbers them).
type sweep struct {
	s        *shaper
	from, to int
	f        apperr.Fields
	check    *attributeChecker
	readers  []ruleReader
	rules    []ruleArrays
	key      string // touch's lookup: an attribute a rule reads
	widest   float64
	touched  int // touch's sum, kept so that the reads are not dropped
	live     []sticket
	kept     []int
	expired  []Expiry
	regionID map[string]int
	ratings  []float64
	// the players' role lists, by ticket from sticket.ratings as the ratings; each the
	// check's (attributeChecker.roleLists)
	playerRoles []roleList
	types       fillTypes
}

// sweepArrays are a sweep's arrays, kept from one pass to the next.
type sweepArrays struct {
	ratings     []float64
	playerRoles []roleList
	rules       []ruleArrays
}

// start readies the sweep over in[from:to]; the first one's arrays take every sweep's
// tickets after (joinSweeps appends them).
func (w *sweep) start(s *shaper, arrays *sweepArrays, from, to int) {
	cfg := s.cfg
	n := to - from
	if from == 0 {
		n = len(s.in)
	}
	*w = sweep{s: s, from: from, to: to, check: cfg.newAttributeChecker(), widest: -1,
		regionID: map[string]int{}, ratings: reuse(arrays.ratings, n)}
	if s.latency {
		w.widest = cfg.MaxLatency[len(cfg.MaxLatency)-1].Value
	}
	if len(s.roles) > 0 {
		w.playerRoles = reuse(arrays.playerRoles, n)
	}
	for _, r := range cfg.Rules {
		if r.readsAttribute() {
			w.key = r.Attribute
			break
		}
	}
	arrays.rules = resize(arrays.rules, len(cfg.Rules))
	w.rules = make([]ruleArrays, len(cfg.Rules))
	w.readers = make([]ruleReader, len(cfg.Rules))
	for k := range cfg.Rules {
		r := &cfg.Rules[k]
		d, was, rd := &w.rules[k], &arrays.rules[k], &w.readers[k]
		d.bound = reuse(was.bound, n)
		rd.attr = w.check.declaredIndex(r.Attribute)
		if a, ok := cfg.Attributes[r.Attribute]; ok && a.Default != nil {
			rd.def = *a.Default
		}
		if r.hasTolerance() {
			d.tol = reuse(was.tol, n)
		}
		switch r.Kind {
		case RuleEqual:
			d.id = reuse(was.id, n)
			rd.numID = map[float64]int32{}
		case RuleIntersect:
			d.set = reuse(was.set, n)
		case RuleDistance:
			d.num = reuse(was.num, n)
		}
	}
}

// run checks and reads the sweep's tickets.
func (w *sweep) run() {
	s, cfg := w.s, w.s.cfg
	for i := w.from; i < w.to; i++ {
		t := &s.in[i]
		if j := i + touchAhead; j < w.to {
			w.touched += touch(&s.in[j], w.key)
		}
		cfg.addTicketFaultsWith(&w.f, t, i, w.check)
		for _, l := range t.Latencies {
			if _, ok := w.regionID[l.Region]; !ok && l.Region != "" {
				w.regionID[l.Region] = len(w.regionID)
			}
		}
		if w.f.Len() > 0 {
			continue // the pass fails: the rest is only checked
		}
		if why := gone(t, s.now, w.widest); why != "" {
			w.expired = append(w.expired, Expiry{Ticket: i, Reason: why})
			continue
		}
		w.kept = append(w.kept, i)
		w.live = append(w.live, w.readTicket(t, i))
		w.readRules(t)
	}
}

// joinSweeps puts the sweeps' faults, tickets and values together in input order, the values of
// each rule numbered as one sweep would have, and returns the number of regions named.
func (s *shaper) joinSweeps(f *apperr.Fields, sweeps []sweep) int {
	regions := map[string]bool{}
	lives, players := 0, 0
	for k := range sweeps {
		w := &sweeps[k]
		if k == 0 {
			*f = w.f
		} else {
			f.Include(w.f.Err())
		}
		for r := range w.regionID {
			regions[r] = true
		}
		lives, players = lives+len(w.live), players+len(w.ratings)
		s.touched += w.touched
	}
	s.regions = make([]string, 0, len(regions))
	for r := range regions {
		s.regions = append(s.regions, r)
	}
	if f.Len() > 0 {
		return len(regions)
	}
	first := &sweeps[0]
	s.ratings, s.types, s.expired = first.ratings, first.types, first.expired
	s.playerRoles = first.playerRoles
	for k := range s.rules {
		d, a := &s.rules[k], &first.rules[k]
		d.bound, d.tol, d.id, d.set, d.num = a.bound, a.tol, a.id, a.set, a.num
	}
	for k := range sweeps[1:] {
		w := &sweeps[k+1]
		shift := int32(len(s.ratings))
		var types []int32
		if s.fill != nil {
			types = s.types.renumber(s.fill, &w.types)
		}
		for j := range w.live {
			w.live[j].ratings += shift
			if types != nil {
				w.live[j].fillType = types[w.live[j].fillType]
			}
		}
		s.ratings, s.expired = append(s.ratings, w.ratings...), append(s.expired, w.expired...)
		if s.playerRoles != nil { // a list per player, as the ratings
			s.playerRoles = append(s.playerRoles, w.playerRoles...)
		}
		for r := range s.rules {
			s.joinRule(r, &first.readers[r], &w.readers[r], &w.rules[r])
		}
	}
	sc := s.scratch
	s.live, s.kept = sc.live[:0], sc.kept[:0]
	for k := range sweeps { // each sweep's tickets right after the one's before
		w := &sweeps[k]
		n := len(s.live)
		s.live, s.kept = s.live[:n+len(w.live)], s.kept[:n+len(w.kept)]
		if n != w.from { // some tickets before had expired: close the gap
			copy(s.live[n:], w.live)
			copy(s.kept[n:], w.kept)
		}
	}
	// The joined arrays but the tickets' are the first sweep's, grown.
	sc.sweeps[0].ratings = s.ratings[:0]
	sc.sweeps[0].playerRoles = s.playerRoles[:0]
	for k := range s.rules {
		d := &s.rules[k]
		sc.sweeps[0].rules[k] = ruleArrays{bound: d.bound[:0], id: d.id[:0], set: d.set[:0], num: d.num[:0], tol: d.tol[:0]}
	}
	for k := range sweeps[1:] {
		w := &sweeps[k+1]
		a := &sc.sweeps[k+1]
		a.ratings, a.playerRoles = w.ratings[:0], w.playerRoles[:0]
		for r := range w.rules {
			x := &w.rules[r]
			a.rules[r] = ruleArrays{bound: x.bound[:0], id: x.id[:0], set: x.set[:0], num: x.num[:0], tol: x.tol[:0]}
		}
	}
	return len(regions)
}

// joinRule appends a later sweep's values of rule k (its reader rd, arrays a) to the pass's,
// renumbered by the first sweep's reader into.
func (s *shaper) joinRule(k int, into, rd *ruleReader, a *ruleArrays) {
	d := &s.rules[k]
	d.bound = append(d.bound, a.bound...)
	d.tol = append(d.tol, a.tol...)
	d.num = append(d.num, a.num...)
	switch d.rule.Kind {
	case RuleEqual:
		renumber := make([]int32, 0, len(rd.strs.names)+len(rd.nums))
		same := true
		for id, name := range rd.strs.names {
			renumber = append(renumber, into.strs.id(name))
			same = same && renumber[id] == int32(id)
		}
		for id, x := range rd.nums {
			to, ok := into.numID[x]
			if !ok {
				to = int32(len(into.nums))
				into.numID[x] = to
				into.nums = append(into.nums, x)
			}
			renumber = append(renumber, to)
			same = same && to == int32(id)
		}
		from := len(d.id)
		d.id = append(d.id, a.id...)
		if !same {
			for j, id := range d.id[from:] {
				d.id[from+j] = renumber[id]
			}
		}
	case RuleIntersect:
		renumber := make([]int32, len(rd.strs.names))
		same := true
		for id, name := range rd.strs.names {
			renumber[id] = into.strs.id(name)
			same = same && renumber[id] == int32(id)
		}
		from := len(d.set)
		d.set = append(d.set, a.set...)
		if !same { // beyond 64 values in all the sets are dropped: endRules reads lists
			for j, set := range d.set[from:] {
				var out uint64
				for ; set != 0; set &= set - 1 {
					if to := renumber[bits.TrailingZeros64(set)]; to < 64 {
						out |= 1 << to
					}
				}
				d.set[from+j] = out
			}
		}
	}
}

// touchAhead is how far ahead of the sweep read touches a ticket's scattered parts.
const touchAhead = 8

// touch reads a word of two of the ticket's scattered parts (its attribute map, by a
// lookup of key, and its ratings), so that their cache misses overlap with the sweep's
// work on the tickets before it rather than stall the sweep when it gets there: the read
// of 100,000 tickets took 10-25% less time (touching their lists and roles too did not
// help). The result only keeps the reads from being dropped.
func touch(t *Ticket, key string) int {
	n := len(t.Ratings)
	if len(t.Ratings) > 0 {
		n += int(t.Ratings[0])
	}
	if key != "" {
		if v, ok := t.Attributes[key]; ok {
			n += len(v.Type)
		}
	}
	return n
}

func (w *sweep) readTicket(t *Ticket, i int) sticket {
	s := w.s
	wait := s.now - t.WaitingSince
	x := sticket{in: int32(i), since: t.WaitingSince, size: len(t.Ratings), iv: current(s.cfg.Interval, wait),
		ratings: int32(len(w.ratings))}
	for _, r := range t.Ratings {
		x.total += r
	}
	w.ratings = append(w.ratings, t.Ratings...)
	x.mean = x.total / float64(x.size)
	x.mask = math.MaxUint64 // regionMask's, once every region is known
	var roles []roleList    // per player, the roles it plays in order
	if len(s.roles) > 0 {
		for j := range x.size {
			var rs roleList                 // none: any
			if j < len(w.check.roleLists) { // the check's, of this ticket
				rs = w.check.roleLists[j]
			}
			w.playerRoles = append(w.playerRoles, rs)
		}
		roles = w.playerRoles[x.ratings : int(x.ratings)+x.size : int(x.ratings)+x.size]
		x.roleSig = roleSignature(roles)
		if x.size == 1 {
			x.solo[0] = roles[0]
		}
	}
	if s.fill != nil {
		x.fillType = w.types.typeOf(s.fill, roles, x.size)
	}
	return x
}

// regionMask is the regions ticket t accepts now: all without latency data.
func (s *shaper) regionMask(t *Ticket) uint64 {
	if len(t.Latencies) == 0 {
		return math.MaxUint64
	}
	limit := current(s.cfg.MaxLatency, s.now-t.WaitingSince)
	mask := uint64(0)
	for _, l := range t.Latencies {
		if l.MS <= limit {
			r, _ := slices.BinarySearch(s.regions, l.Region)
			mask |= 1 << r
		}
	}
	return mask
}

// ruleReader reads one rule's values of the live tickets as the sweep meets them.
type ruleReader struct {
	attr  int   // the rule's attribute among the checker's declared ones, -1: none
	def   Value // its default
	strs  interner
	numID map[float64]int32
	nums  []float64 // equal (numbers): by id
}

// startRules makes the pass's rules, without their arrays (the sweeps').
func (s *shaper) startRules() {
	s.part = -1
	s.rules = make([]shapeRule, len(s.cfg.Rules))
	for k := range s.cfg.Rules {
		r := &s.cfg.Rules[k]
		d := &s.rules[k]
		d.rule = r
		d.always, d.kind, d.minCommon = r.OptionalAfterS == nil, walkKinds[r.Kind], r.minCommon()
		if s.part < 0 && r.Kind == RuleEqual && d.always {
			s.part = k
		}
		if r.classified() && !slices.ContainsFunc(s.reported, func(j int) bool { return s.cfg.Rules[j].Attribute == r.Attribute }) {
			s.reported = append(s.reported, k)
		}
	}
}

// readRules appends each rule's values of ticket t, the last live one, whose attributes
// check has just checked.
func (w *sweep) readRules(t *Ticket) {
	s := w.s
	wait := s.now - t.WaitingSince
	for k := range s.rules {
		d, rd := &w.rules[k], &w.readers[k]
		r := s.rules[k].rule
		d.bound = append(d.bound, r.bindsAt(wait))
		if r.hasTolerance() {
			d.tol = append(d.tol, current(r.Expansions, wait))
		}
		v := rd.def // validated: a rule reads a given attribute or a default
		if rd.attr >= 0 && w.check.has[rd.attr] {
			v = w.check.vals[rd.attr]
		}
		switch r.Kind {
		case RuleEqual:
			if v.Type == TypeNumber {
				id, ok := rd.numID[v.Num]
				if !ok {
					id = int32(len(rd.nums))
					rd.numID[v.Num] = id
					rd.nums = append(rd.nums, v.Num)
				}
				d.id = append(d.id, id)
			} else {
				d.id = append(d.id, rd.strs.id(v.Str))
			}
		case RuleIntersect:
			var set uint64 // the values numbered below 64: all of them while bits holds
			for _, x := range v.List {
				if id := rd.strs.id(x); id < 64 {
					set |= 1 << id
				}
			}
			d.set = append(d.set, set)
		case RuleDistance:
			if r.readsRating() {
				d.num = append(d.num, w.live[len(w.live)-1].mean)
			} else {
				d.num = append(d.num, v.Num)
			}
		}
	}
}

// endRules completes the rules' arrays once every live ticket is read (kept: their input
// indices): an intersect rule of more than 64 values keeps its lists as value ids, read
// again from the tickets.
func (s *shaper) endRules(readers []ruleReader, kept []int) {
	for k := range s.rules {
		d, rd := &s.rules[k], &readers[k]
		d.names, d.nums = rd.strs.names, rd.nums
		if d.rule.Kind != RuleIntersect {
			continue
		}
		if d.bits = len(d.names) <= 64; d.bits {
			d.byName = make([]int32, len(d.names)) // common lists a match's values in this order
			for id := range d.byName {
				d.byName[id] = int32(id)
			}
			slices.SortFunc(d.byName, func(a, b int32) int { return cmp.Compare(d.names[a], d.names[b]) })
			continue
		}
		d.set = nil
		d.list = reuse(s.scratch.lists, len(kept))
		for _, i := range kept {
			v, ok := s.in[i].Attributes[d.rule.Attribute]
			if !ok {
				v = rd.def
			}
			ids := s.listIDs.take(len(v.List))
			for n, x := range v.List {
				ids[n] = rd.strs.id(x)
			}
			sortSmall(ids)
			d.list = append(d.list, ids)
		}
	}
}

// values is the number of values intersect rule d's ticket i lists.
func (d *shapeRule) values(i int32) int {
	if d.bits {
		return bits.OnesCount64(d.set[i])
	}
	return len(d.list[i])
}

// link orders the live tickets by (partition value, mean rating, age) and links each to its
// neighbours of the same partition value.
func (s *shaper) link() {
	// A large pass counts the roles on another core while this one sorts (both only read
	// the tickets), then moves the rules' values and half the tickets there while this one
	// moves the other half, so that a walk reads neighbours in memory. The tickets are
	// gathered into an array of their own: in place, following the cycles of the order,
	// their move was the pass's longest step on one core (4 of 8.7 ms of linking).
	var wg sync.WaitGroup
	beside := func(f func()) { f() }
	if len(s.live) >= parallelMin && runtime.GOMAXPROCS(0) > 1 {
		beside = wg.Go
	}
	beside(s.countAllRoles)
	order, aged := s.order()
	wg.Wait()
	sc := s.scratch
	sorted := resize(sc.sorted, len(s.live))
	sc.sorted = sorted
	half := len(order) / 2
	beside(func() {
		s.moveRules(order)
		for k, i := range order[:half] {
			sorted[k] = s.live[i]
		}
	})
	for k, i := range order[half:] {
		sorted[half+k] = s.live[i]
	}
	wg.Wait()
	s.live = sorted
	s.nodes = resize(s.scratch.nodes, len(s.live))
	for k := range s.live {
		x := &s.live[k]
		s.nodes[k] = walkNode{mean: x.mean, iv: x.iv, prev: -1, next: -1, fillType: x.fillType, size: int32(x.size)}
		if k > 0 && s.partOf(int32(k-1)) == s.partOf(int32(k)) {
			s.nodes[k].prev, s.nodes[k-1].next = int32(k-1), int32(k)
		}
	}
	// Age order: the live tickets were read in input order, which the queue service keeps
	// by age; only when it is not are they sorted.
	s.byAge = resize(s.scratch.byAge, len(s.live))
	for k, i := range order {
		s.byAge[i] = int32(k)
	}
	if !aged {
		slices.SortStableFunc(s.byAge, func(a, b int32) int { return cmp.Compare(s.live[a].since, s.live[b].since) })
	}
}

// moveRules puts the rules' arrays in the order of order. Each is gathered into a spare
// array, which is then the array the first sweep reads the next pass into: a gather reads
// at random and writes in order, where following the cycles in place did both at random,
// at a quarter of the tick's time to link.
func (s *shaper) moveRules(order []int32) {
	sc := s.scratch
	sc.spareRules = resize(sc.spareRules, len(s.rules))
	for k := range s.rules {
		d, spare := &s.rules[k], &sc.spareRules[k]
		d.bound, spare.bound = gather(d.bound, spare.bound, order)
		d.id, spare.id = gather(d.id, spare.id, order)
		d.set, spare.set = gather(d.set, spare.set, order)
		d.num, spare.num = gather(d.num, spare.num, order)
		d.tol, spare.tol = gather(d.tol, spare.tol, order)
		sc.sweeps[0].rules[k] = ruleArrays{bound: d.bound[:0], id: d.id[:0], set: d.set[:0], num: d.num[:0], tol: d.tol[:0]}
		if d.list != nil { // more than 64 values: rare
			sc.doneRules = resize(sc.doneRules, len(order))
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
	out = resize(spare, len(xs))
	for k, i := range order {
		out[k] = xs[i]
	}
	return out, xs[:0]
}

// countAllRoles counts the searching players of each role, by partition (countRoles).
func (s *shaper) countAllRoles() {
	if s.roleLo == nil {
		return
	}
	s.roleCount = make([][]int32, s.partitions())
	for p := range s.roleCount {
		s.roleCount[p] = make([]int32, len(s.roles))
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
	sc := s.scratch
	order = resize(sc.order, n)
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
	means := resize(sc.means, n)
	sc.means = means
	for i := range s.live {
		means[i] = s.live[i].mean
	}
	sc.sort.SortIndex(means, order)
	if s.part < 0 {
		return order, aged
	}
	// A counting sort by partition value, stable.
	d := &s.rules[s.part]
	start := make([]int32, len(d.names)+len(d.nums)+1)
	for _, id := range d.id {
		start[id+1]++
	}
	for v := 1; v < len(start); v++ {
		start[v] += start[v-1]
	}
	out := resize(sc.count, n)
	for _, i := range order {
		v := d.id[i]
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
func (s *shaper) result() Result {
	r := Result{Expired: s.expired}
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
	var worst [MaxRegions]float64
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
func (s *shaper) addWait(a int32, w Wait) {
	w.Ticket = int(s.live[a].in)
	s.waits = append(s.waits, w)
	s.waitOf = append(s.waitOf, a)
	s.waitRank = append(s.waitRank, s.rank)
}

// ruleWait is a Wait naming rule r.
func ruleWait(r *Rule) Wait { return Wait{Rule: r.Name, Kind: r.Kind, Attribute: r.Attribute} }

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
func roleSignature(roles []roleList) uint64 {
	var masks [MaxTeamSize]uint64
	for j := range roles {
		m := uint64(1)<<MaxRoles - 1 // any
		if rs := roles[j].list(); len(rs) > 0 {
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

// arena hands out slices cut from shared arrays, each capped at its length so that no
// append reaches the next: a pass of 100,000 tickets makes 10,000 matches, each of a few
// slices.
type arena[T any] struct{ buf []T }

const arenaChunk = 4096

func (a *arena[T]) take(n int) []T {
	if n > len(a.buf) {
		a.buf = make([]T, max(n, arenaChunk))
	}
	out := a.buf[:n:n]
	a.buf = a.buf[n:]
	return out
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
