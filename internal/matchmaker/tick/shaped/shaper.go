package shaped

import (
	"math"
	"math/bits"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/avoid"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Run is the pass of tick.Run over a queue with a team shape (cfg.Shape), which has
// checked cfg and now: the package's documentation says what it decides. The tickets are
// checked as they are read; an invalid one fails the pass with an apperr.Invalid error
// naming its fields as tickets[i].field.
func Run(tickets []matchpool.Ticket, now float64, cfg *matchrules.Config) (matchpool.Result, error) {
	var f apperr.Fields
	s := &shaper{cfg: cfg, now: now, tickets: tickets, buffers: passBufferPool.Get().(*passBuffers)}
	defer s.keep()
	s.split.shape = newShapeInfo(cfg)
	s.fillSpace = newFillSpace(cfg, &s.split.shape)
	s.read(&f)
	if err := f.Err(); err != nil {
		return matchpool.Result{}, err
	}
	s.aggregateRoles()
	s.keepsBalance = len(cfg.Shape) == 2 && !slices.ContainsFunc(cfg.Rules, func(r matchrules.Rule) bool { return r.Kind == matchrules.RuleTeamBalance })
	s.link()
	s.serveAll()
	return s.result(), nil
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
	buffers *passBuffers // the arrays of an earlier pass, reused
	now     float64
	tickets []matchpool.Ticket
	// the live tickets' players' ratings, in input order: makeMatch reads them here rather
	// than from the tickets, a cache miss or two each; and, with roles, their role lists
	ratings     []float64
	playerRoles []matchrules.RoleList
	latency     bool
	avoid       *avoid.Pairs // the tickets that may not meet; nil without avoid lists
	regions     []string     // sorted; a region's id is its index
	roles       []string
	rules       []shapeRule
	// the rules a match reports its attributes by: the equal and intersect ones
	reported      []int
	partitionRule int // the rule whose value partitions the walks, -1: none

	live  []sticket
	byAge []int32 // live indices, oldest first
	// the walks' links, by live index: what nearer reads of each ticket it passes, two to a
	// cache line where a sticket takes two lines
	nodes []walkNode

	expired []matchpool.Expiry

	// the compositions of every team together, for a walk's check (nil: none)
	roleMins, roleMaxes []int
	roleMinSum          int
	searchingByRole     [][]int32            // by partition value, by role: the searching players who play it
	inputs              []int                // the live tickets' input indices
	listIDs             scratch.Arena[int32] // the intersect rules' lists of more than 64 values, as value ids
	// with few enough states, the exact check of a group's seats and roles (shaped_fill.go)
	fillSpace   *fillSpace
	ticketTypes fillTypes // the tickets' types (sticket.fillType)

	shapePlayers int  // the shape's players, Σ sizes (capacity)
	keepsBalance bool // two teams without a team_balance rule: the default balance binds (balance.go)
	joined       bool // waits holds the forks' waits of the tickets still waiting (join)
	touched      int  // touch's sum, kept so that the reads are not dropped

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
	anchorRank          int32   // the anchor's being served

	split     splitState
	roleOut   []int8
	sizesBuf  []int
	roomBuf   []int
	walkGroup group
	// the exhaustive search's groups, by depth
	searchGroups []*group
	// the matches' parts, cut from arrays shared by many matches
	ticketArena scratch.Arena[int]
	stages      stageCount
	teamArena   scratch.Arena[matchpool.Team]
	slotArena   scratch.Arena[matchpool.Slot]
	nameArena   scratch.Arena[string]
	attrArena   scratch.Arena[matchpool.MatchAttribute]
	keptBuf     []int32
	fillBuf     []uint64
	// a match's players' roles, by member from roleAt[member] (makeMatch)
	matchRoles []int8
	roleAt     []int

	// scratch of one anchor
	mins       []int
	candidates []int32        // its acceptable candidates, nearest first, up to fallbackCandidates+1
	turnedDown matchpool.Wait // the first split a rule turned down
	turnDowns  int
	// the look-ahead's (balance.go): whether the anchor looked ahead, whether that search held
	// every candidate within its interval and found no match that keeps the balance
	// (exhausted), its candidates and its most even group
	lookedAhead, sawEvery, exhausted bool
	around, bestBuf                  []int32
}

// sticket is a live ticket of a shaped pass.
type sticket struct {
	// What a walk reads of each candidate comes first, in one cache line.
	mean, interval float64
	regions        uint64 // regions it accepts now
	fillType       int32  // with a fill space, its type: the tickets of one type seat alike (canSeat)
	ratingsAt      int32  // where its players' ratings start in shaper.ratings
	since          float64
	total          float64
	size           int
	input          int32
	taken          bool
	// a solo's roles in its order (a party's are in shaper.playerRoles, from ratingsAt): in
	// the sticket, which a split reads anyway, where a list in the sweeps' arrays, in input
	// order, cost a cache miss a ticket to name the roles of each match (shaper.rolesOf)
	soloRoles [1]matchrules.RoleList
	rolesKey  uint64 // the roles its players play, as a set of sets: equal for equal tickets
}

// rolesOf is x's players' role lists, in their order (nil when the queue has no roles).
func (s *shaper) rolesOf(x *sticket) []matchrules.RoleList {
	switch {
	case s.playerRoles == nil:
		return nil
	case x.size == 1:
		return x.soloRoles[:]
	}
	return s.playerRoles[x.ratingsAt : int(x.ratingsAt)+x.size : int(x.ratingsAt)+x.size]
}

// walkNode is what a walk reads of a live ticket it passes: a candidate the rules turn
// away costs a read of its node (two to a cache line) and of the rules' arrays, not of its
// sticket.
type walkNode struct {
	mean, interval float64
	prev, next     int32 // unmatched neighbours in rating, in its partition
	fillType       int32 // sticket's
	size           int32
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
	kind       walkKind
	minCommon  int
	bound      []bool
	valueID    []int32   // equal: the value's id
	list       [][]int32 // intersect with more than 64 values: value ids, ascending
	listSet    []uint64  // intersect with at most 64 values (bits): the list as bits
	listAsBits bool
	number     []float64 // distance
	tolerance  []float64 // distance, team_balance
	names      []string  // equal (strings), intersect: by id
	byName     []int32   // intersect with bits: the ids in the order of their names
	nums       []float64 // equal (numbers): by id
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
		for _, l := range s.tickets[s.live[i].input].Latencies {
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
	if s.shapePlayers == 0 {
		for _, d := range s.cfg.Shape {
			s.shapePlayers += d.Size
		}
	}
	return s.shapePlayers
}

// addWait records why anchor a waits.
func (s *shaper) addWait(a int32, w matchpool.Wait) {
	w.Ticket = int(s.live[a].input)
	s.waits = append(s.waits, w)
	s.waitOf = append(s.waitOf, a)
	s.waitRank = append(s.waitRank, s.anchorRank)
}

// aggregateRoles sums the teams' compositions, for the walk's check of a group's roles.
func (s *shaper) aggregateRoles() {
	in := &s.split.shape
	if !slices.Contains(in.hasComposition, true) {
		return
	}
	s.roleMins, s.roleMaxes = make([]int, len(s.roles)), make([]int, len(s.roles))
	for k := range in.sizes {
		for r := range s.roles {
			if in.hasComposition[k] {
				s.roleMins[r] += in.roleMin[k][r]
				s.roleMaxes[r] += in.roleMax[k][r]
			} else {
				s.roleMaxes[r] += in.sizes[k]
			}
		}
		s.roleMinSum += in.roleMinSum[k]
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
	if s.partitionRule < 0 {
		return 1
	}
	return len(s.rules[s.partitionRule].names) + len(s.rules[s.partitionRule].nums)
}

// partOf is ticket i's value of the partitioning rule (0 without one).
func (s *shaper) partOf(i int32) int32 {
	if s.partitionRule < 0 {
		return 0
	}
	return s.rules[s.partitionRule].valueID[i]
}
