package tick

import (
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
)

// Run makes one pass over the waiting tickets at time now (seconds, on the tickets' clock)
// and returns the matches to make and the tickets that expired. It reads no clock and
// keeps no state: the same input gives the same result.
//
// Expiry: a ticket expires when now >= ExpiresAt (a ticket lives in [WaitingSince,
// ExpiresAt)); it is reported in Expired (ReasonTTL) and never matched. With latency
// considered, a ticket whose every measured region is beyond the widest limit (the last
// MaxLatency step) can never match: it is reported at once (ReasonNoRegion).
//
// Expansions: a ticket's wait is now - WaitingSince (in float64; 0 when negative), and its
// current interval and latency limit are the values of the last steps whose AfterS <= wait.
//
// Anchors: the tickets are taken oldest first (WaitingSince, then input index) as the
// anchor of a match. A candidate ticket is acceptable to the anchor when the difference of
// their ratings is within both tickets' current intervals (mutual acceptance), a party's
// rating being its players' mean. Acceptance is between the anchor and each other ticket of
// its match: two other tickets of one match, on either side of the anchor, may be further
// apart than either accepts. A match is whole tickets, 2 x TeamSize players, that split
// into two teams of TeamSize with every party on one team. An anchor for which no such set
// of acceptable tickets exists keeps waiting and stays a candidate for the anchors after
// it; the next oldest anchors.
//
// Choosing the tickets, rating_window (the analogue of pairing.RatingWindow): the
// acceptable candidates are taken nearest in rating first (|difference| in float64, the
// older first on a tie) until some of them make a match with the anchor; the last one
// taken is in it, and among the earlier ones the nearest are kept first: each one is kept
// when a match can still be completed with it. So if any match for the anchor exists, one
// is found, and its farthest ticket is as near as it can be.
//
// greedy_pairs (the thesis's rule, as pairing.GreedyPairs, within the anchor's acceptable
// tickets): the anchor takes as its opponent the nearest acceptable ticket that fits; then
// the oldest acceptable ticket not yet taken, the sub-anchor, takes as its own opponent
// the nearest ticket acceptable to both of them that fits; and so on until the match is
// complete. A ticket fits when the teams can still be filled after it, parties whole, and
// are full once the match has 2 x TeamSize players; a sub-anchor that fills the match
// exactly completes it alone, and one that finds no opponent is passed over. When this
// builds no match the anchor is served by rating_window's rule, so an anchor for which a
// match exists never waits.
//
// Latency (MaxLatency not empty): a match is made only in a region where every ticket's
// latency is within its own current limit; a ticket without latency data accepts any
// region. If several regions could hold the match found nearest in rating, the one with
// the smallest worst latency of its tickets wins (then the first by name), and the same
// rule picks Match.Region among all regions every ticket of the match accepts.
//
// Rules (Config.Rules; see Rule): a rule binds a ticket until its wait reaches the rule's
// OptionalAfterS, and a match satisfies it when the tickets it still binds satisfy it
// together, a tolerance being the smallest of their current values. The search turns the
// rules into classes (classes.go), one set of head counts per class in the walk above, as
// latency's regions always were: a candidate is acceptable when, besides the interval, it
// has the anchor's value of each equal rule binding both, is within the smaller tolerance
// of the anchor's value of each distance rule binding both, and shares a class with the
// anchor; a match is the tickets of one class. The guarantee: if a match for the anchor
// exists whose tickets share one of the anchor's first MaxClasses classes, one is found.
// For latency, equal and intersect that is every match that keeps them (up to the
// MaxClasses cut, reached only with many regions or values). For distance with the anchor
// bound, the classes are windows of the rule's values around the anchor's, and a match
// found keeps the rule; the matches in no window, whose spread exceeds (1 -
// 1/distanceWindows) of their smallest tolerance, may be missed. The rules judged on the
// match as a whole, team_balance (the teams' average difference after the split) and
// distance when the anchor is past its optional_after_s, are checked on the match picked:
// one that breaks either is turned down and the walk goes on (the next class's pick, then
// the next candidate's), at most maxPicks picks an anchor, so with such a rule an anchor may
// wait although a match for it exists (its picks hold the nearest tickets in rating, which
// may be what breaks the rule); it then waits on that rule (Result.Waiting, Found). Among
// classes whose picks complete at the same candidate, the one whose region has the smallest
// worst latency wins, then the first class. Match.Attributes report what equal and
// intersect rules agreed on. Without rules a pass is what it was before rules existed.
//
// Waiting: each ticket that anchored a search and is left waiting has a Wait naming the
// rule that stopped it (see Wait).
//
// Backfill: before any anchor, the backfill tickets (Ticket.Backfill) are served, oldest
// first, each as backfill (backfill.go) describes: the acceptable tickets nearest the match's
// mean rating, placed by teams.Assign among the teams with open slots, until the slots are
// full. A backfill ticket is never an anchor nor a candidate; Result.Fills lists what each
// got, and a backfill that got nobody keeps waiting. With rules, a backfill ticket's
// attributes are its running match's values, and its joiners keep its equal, intersect and
// distance rules with it (backfill_rules.go).
//
// Teams: the most even split of the match's tickets, parties whole (the least |difference
// of team totals| over every split, the anchor's team being team 0; sums in float64, so
// "least" holds up to rounding), then each team sorted by rating and paired in order.
//
// Errors: an apperr.Invalid error naming every invalid field of cfg (see Config.Validate),
// now, and of the tickets as tickets[i].field (see Ticket.Validate and
// Config.ValidateTicket for attributes); a pass with more than
// MaxRegions region names is invalid too (tickets[i].latencies[j].region).
//
// Cost: O(N log N) with a radix sort for N tickets, plus for each anchor the tickets within
// its interval walked until a match forms (a handful in a dense queue) and the exact split
// (every split for m tickets up to 12, meet in the middle above: about 2^(m/2) steps).
func Run(tickets []Ticket, now float64, cfg Config) (Result, error) {
	var f apperr.Fields
	cfg.addFaults(&f)
	if !(math.Abs(now) <= MaxMagnitude) {
		f.Add("now", "must be a finite number between %g and %g", -MaxMagnitude, MaxMagnitude)
	}
	if f.Len() > 0 {
		teamSize := min(max(cfg.TeamSize, 1), MaxTeamSize) // checks parties even when team_size is wrong
		for i := range tickets {
			tickets[i].addFaults(&f, i, teamSize)
			cfg.addAttributeFaultsOf(&f, &tickets[i], i)
		}
		return Result{}, f.Err()
	}
	if len(tickets) > math.MaxInt32 {
		return Result{}, apperr.New(apperr.TooLarge, "at most %d tickets in one pass", math.MaxInt32)
	}
	if cfg.shaped() {
		return runShaped(tickets, now, &cfg)
	}
	p := passes.Get().(*pass)
	defer p.release()
	// init checks the tickets as it reads them: a ticket's ratings and latencies are read
	// from memory once, the expensive part of reading 100,000 tickets.
	if err := p.init(tickets, now, cfg, &f); err != nil {
		return Result{}, err
	}
	p.run()
	return Result{Fills: p.fills, Matches: p.result(), Expired: p.expired, Waiting: p.resultWaits()}, nil
}

// passes keep a pass's buffers from one call to the next: the queue service runs a pass
// of the same queue every tick, and a pass of 100,000 tickets needs about 10 MB of them.
var passes = sync.Pool{New: func() any { return new(pass) }}

// release drops what the pass holds of the caller's (the result, region names) and pools
// it.
func (p *pass) release() {
	p.expired, p.regionNames, p.in, p.interval, p.fills = nil, nil, nil, nil, nil
	for i := range p.rules { // what the pass holds of the caller's
		d := &p.rules[i]
		d.rule, d.names, d.attr = nil, nil, Attribute{}
		clear(d.strs.names)
	}
	p.dims = p.dims[:0]
	clear(p.attrs)
	clear(p.attrList)
	p.read = p.read[:0]
	passes.Put(p)
}

// resultWaits copies out the waits of the tickets that still wait: an anchor that found
// no match may have been taken into a later anchor's.
func (p *pass) resultWaits() []Wait {
	n := 0
	for _, pos := range p.waitPos {
		if p.nodes[pos].state != matched {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Wait, 0, n)
	for i, x := range p.waits {
		if p.nodes[p.waitPos[i]].state != matched {
			out = append(out, x)
		}
	}
	return out
}

// resize returns s with length n, reusing its array when it is large enough (the caller
// overwrites every element).
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/8)
	}
	return s[:n]
}

// Ticket states in a pass.
const (
	waiting uint8 = iota
	matched
	placed // taken into the match greedy_pairs is building
)

// pass is one run of the algorithm. Tickets that have not expired are "live"; a live
// ticket's rank is its place in age order (0 is the oldest), its position its place in
// (mean rating, rank) order. The anchor loop goes by rank, the searches by position:
// the nodes of unmatched tickets are linked (prev, next), so a walk outward from the
// anchor skips matched tickets in O(1). What a match needs of its tickets is copied by
// position, so a match reads memory near its anchor rather than all over the input: the
// input is read once, in age order (which is usually its own), into arrays by rank that
// are then gathered by position.
type pass struct {
	t           int
	in          []Ticket // the caller's, during Run
	now         float64
	interval    []Step
	bf          []int32 // live backfill tickets (input indices), oldest first
	fills       []Fill
	greedy      bool
	latency     bool
	regionNames []string // sorted: a region's id is its index

	// by rank
	age   []int32 // input index
	posOf []int32
	taken []bool    // matched: the anchor loop skips them without reading their nodes
	mean  []float64 // the sort's keys
	info  []info
	ratK  []float64 // parties' ratings
	latK  []latency // with region ids in order of first sight

	// by position
	rank  []int32
	nodes []node
	rat   []float64 // the players' ratings, by position of their tickets
	lat   []latency // the latencies, by position of their tickets

	since []float64 // to sort by age when the input is not in age order

	count    [MaxTeamSize + 1]int  // unmatched tickets by size
	feasible [MaxTeamSize + 1]int8 // cache of sizeFeasible by anchor size: 0 unknown, 1 yes, -1 no

	tree minTree // greedy_pairs: the oldest unmatched ticket in a range of positions

	// scratch of one anchor
	hs      headSpace
	dp      []heads // per region
	walk    []int32 // acceptable candidates, nearest first
	need    []heads
	chosen  []int32
	best    []int32
	touched []int32
	sp      splitter
	members [2][]member

	// rules: what the pass read of each, and the classes of the anchor being served
	ruled        bool    // the config has rules
	part         int     // the rule whose value partitions the walks (partition), -1: none
	pprev, pnext []int32 // with part, the links of the unmatched positions of one value
	matchLevel   bool    // some rule is judged on the match (distance, team_balance)
	rules        []ruleData
	dims         []dim
	inner        int    // classes per region of the anchor (1: the classes are the regions)
	classRegions []int8 // with inner > 1, the anchor's regions by id: class k is in classRegions[k/inner]
	sets         []uint64
	wins         []window
	zeroRule     int // the rule that rules out the anchor, when anchorClasses returns 0
	wmask        []uint64
	rej          []rejection
	tries        []try
	picks        int  // matches an anchor's walk picked
	turnedDown   Wait // the first match of the anchor's walk a rule turned down
	waits        []Wait
	waitPos      []int32 // the position of each wait's ticket
	judged       []int32 // scratch of matchAttributes
	read         []readAttr
	attrs        []MatchAttribute // of the matches made
	attrList     []string         // their lists
	attrAt       []int32          // where each one's list starts in attrList
	vals         []Value          // by rank, the values of read

	// the result: the matches made and their parts, copied out at the end
	made    []made
	ids     []int
	slots   []Slot
	pairs   []Pair
	expired []Expiry
}

// node is what the searches read of a live ticket, at its position: a walk reads one
// cache line per ticket (64 bytes) rather than one per array.
type node struct {
	key        float64 // mean rating
	iv         float64 // current interval
	mask       uint64  // regions the ticket accepts now (bit 0 alone without latency)
	prev, next int32   // unmatched positions, -1 at the ends
	rank       int32
	in         int32   // input index
	total      float64 // sum of the players' ratings
	rat        int32   // a party's ratings are rat[rat : rat+size]
	lat        int32   // its latencies are lat[lat : lat+nlat]
	size       uint8   // players
	nlat       uint8
	state      uint8
}

// info is what the pass reads of a live ticket, by rank, to gather by position.
type info struct {
	mean, iv, limit, total float64 // limit: current latency limit
	in                     int32
	rat                    int32 // a party's ratings are ratK[rat : rat+size]
	lat                    int32 // its latencies are latK[lat : lat+nlat]
	size, nlat             uint8
}

// latency is a ticket's latency to the region of id region.
type latency struct {
	ms     float64
	region uint8
}

func (p *pass) init(tickets []Ticket, now float64, cfg Config, f *apperr.Fields) error {
	p.t = cfg.TeamSize
	if p.hs.t != p.t { // a pooled pass keeps the geometry of its last team size
		p.hs.init(p.t)
	}
	p.greedy, p.latency = cfg.Strategy == GreedyPairs, len(cfg.MaxLatency) > 0
	p.count, p.feasible = [MaxTeamSize + 1]int{}, [MaxTeamSize + 1]int8{}
	n := len(tickets)

	// Age order; the queue service keeps its tickets in arrival order, so usually no sort.
	// (An invalid WaitingSince sorts somewhere and is reported below.)
	age := resize(p.age, n)
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = tickets[i-1].WaitingSince <= tickets[i].WaitingSince
	}
	if sorted {
		for i := range age {
			age[i] = int32(i)
		}
	} else {
		p.since = resize(p.since, n)
		for i, t := range tickets {
			p.since[i] = t.WaitingSince
		}
		pairing.SortIndex(p.since, age)
	}
	widest := -1.0 // the widest latency limit: a ticket with data and no region within it never matches
	if p.latency {
		widest = cfg.MaxLatency[len(cfg.MaxLatency)-1].Value
	}
	live := 0
	p.bf = p.bf[:0]
	for _, i := range age {
		if gone(&tickets[i], now, widest) != "" {
			continue
		}
		if tickets[i].Backfill != nil { // served apart, first; never a candidate
			tickets[i].addFaults(f, int(i), p.t)
			cfg.addAttributeFaultsOf(f, &tickets[i], int(i))
			p.bf = append(p.bf, i)
			continue
		}
		age[live] = i
		live++
	}
	p.age = age[:live]
	if live+len(p.bf) < n {
		p.expired = make([]Expiry, 0, n-live)
		for i := range tickets {
			if why := gone(&tickets[i], now, widest); why != "" {
				tickets[i].addFaults(f, i, p.t)
				cfg.addAttributeFaultsOf(f, &tickets[i], i)
				p.expired = append(p.expired, Expiry{Ticket: i, Reason: why})
			}
		}
	}

	// By rank, every live ticket read once, in age order (usually the input's).
	p.mean = resize(p.mean, live)
	p.info = resize(p.info, live)
	p.ratK, p.latK = p.ratK[:0], p.latK[:0]
	var ids map[string]int
	var last []RegionLatency // the previous ticket's latencies: tickets mostly list the same regions
	var lastID []latency
	if p.latency {
		ids = make(map[string]int)
	}
	players := 0
	attributes := len(cfg.Rules) > 0 || len(cfg.Attributes) > 0
	if attributes {
		p.declare(&cfg)
	}
	for k, i := range p.age {
		t := &tickets[i]
		t.addFaults(f, int(i), p.t)
		if attributes {
			p.readAttributes(f, &cfg, t, int(i))
		}
		if len(t.Roles) > 0 { // a queue of two teams without a shape declares no roles
			cfg.addRoleFaults(f, t, func(field string) string { return "tickets[" + strconv.Itoa(int(i)) + "]." + field }, nil)
		}
		s := 0.0
		for _, r := range t.Ratings {
			s += r
		}
		x := info{mean: s / float64(len(t.Ratings)), iv: current(cfg.Interval, now-t.WaitingSince),
			total: s, in: i, size: uint8(len(t.Ratings))}
		players += len(t.Ratings)
		if len(t.Ratings) > 1 {
			x.rat = int32(len(p.ratK))
			p.ratK = append(p.ratK, t.Ratings...)
		}
		if p.latency {
			x.limit = current(cfg.MaxLatency, now-t.WaitingSince)
			x.lat, x.nlat = int32(len(p.latK)), uint8(len(t.Latencies))
			for j, l := range t.Latencies {
				if j < len(last) && last[j].Region == l.Region {
					p.latK = append(p.latK, latency{l.MS, lastID[j].region})
					continue
				}
				id, ok := ids[l.Region]
				switch {
				case ok:
				case len(ids) == MaxRegions: // the pass fails below; id 0 holds the place
					f.Add("tickets["+strconv.Itoa(int(i))+"]."+latencyField(j, "region"),
						"is a region beyond the %d a pass can hold", MaxRegions)
				default:
					id = len(ids)
					ids[l.Region] = id
				}
				p.latK = append(p.latK, latency{l.MS, uint8(id)})
			}
			if len(t.Latencies) > 0 {
				last, lastID = t.Latencies, p.latK[x.lat:]
			}
		}
		p.mean[k] = x.mean
		p.info[k] = x
	}
	if err := f.Err(); err != nil {
		return err
	}
	var rename [MaxRegions]uint8
	all := uint64(1)
	if p.latency {
		all = p.names(ids, &rename)
	}
	p.rank = resize(p.rank, live)
	pairing.SortIndex(p.mean, p.rank)

	// By position.
	p.posOf = resize(p.posOf, live)
	p.taken = resize(p.taken, live)
	clear(p.taken)
	p.nodes = resize(p.nodes, live)
	p.rat = resize(p.rat, len(p.ratK))
	p.lat = resize(p.lat, len(p.latK))
	rat, lat := int32(0), int32(0)
	for pos, k := range p.rank {
		p.posOf[k] = int32(pos)
		in := &p.info[k]
		x := node{key: in.mean, iv: in.iv, mask: 1, prev: int32(pos) - 1, next: int32(pos) + 1,
			rank: k, in: in.in, total: in.total, size: in.size}
		p.count[in.size]++
		if in.size > 1 {
			x.rat = rat
			rat += int32(copy(p.rat[rat:], p.ratK[in.rat:in.rat+int32(in.size)]))
		}
		if p.latency {
			// The regions within the ticket's current limit, or all of them without data.
			x.lat, x.nlat, x.mask = lat, in.nlat, all
			if in.nlat > 0 {
				x.mask = 0
			}
			for _, l := range p.latK[in.lat : in.lat+int32(in.nlat)] {
				l.region = rename[l.region]
				p.lat[lat] = l
				lat++
				if l.ms <= in.limit {
					x.mask |= 1 << l.region
				}
			}
		}
		p.nodes[pos] = x
	}
	if live > 0 {
		p.nodes[live-1].next = -1
	}
	if p.greedy {
		p.tree.init(p.rank)
	}

	p.in, p.now, p.interval = tickets, now, cfg.Interval
	p.dp = resize(p.dp, MaxClasses)
	p.waits, p.waitPos = p.waits[:0], p.waitPos[:0]
	p.readRules(tickets, &cfg)
	p.made, p.ids, p.slots, p.pairs = p.made[:0], p.ids[:0], p.slots[:0], p.pairs[:0]
	p.attrs, p.attrList, p.attrAt = p.attrs[:0], p.attrList[:0], p.attrAt[:0]
	return nil
}

// gone says why a ticket leaves the pass unmatched: ReasonTTL when its ExpiresAt has come,
// ReasonNoRegion when latency is considered (widest >= 0, the last step's limit) and every
// region it measured is beyond even that limit; "" while it may still match.
func gone(t *Ticket, now, widest float64) string {
	if now >= t.ExpiresAt {
		return ReasonTTL
	}
	if widest < 0 || len(t.Latencies) == 0 {
		return ""
	}
	for _, l := range t.Latencies {
		if l.MS <= widest || l.MS != l.MS { // NaN: invalid, reported with the live tickets
			return ""
		}
	}
	return ReasonNoRegion
}

// names sorts the regions seen (ids in order of first sight), so that a region's id is its
// place in name order: the order ties between regions are broken in. It sets rename (from
// first-sight id to id) and returns the mask of every region, that of a ticket without
// latency data.
func (p *pass) names(ids map[string]int, rename *[MaxRegions]uint8) uint64 {
	p.regionNames = make([]string, len(ids))
	for name, id := range ids {
		p.regionNames[id] = name
	}
	slices.Sort(p.regionNames)
	for id, name := range p.regionNames {
		rename[ids[name]] = uint8(id)
	}
	switch len(p.regionNames) {
	case 0:
		return 1 // no ticket has data: one region, unnamed, that every ticket accepts
	case MaxRegions:
		return math.MaxUint64
	}
	return uint64(1)<<len(p.regionNames) - 1
}

// run is the anchor loop.
func (p *pass) run() {
	p.serveBackfills()
	for k, a := range p.posOf {
		if p.taken[k] {
			continue
		}
		if p.nodes[a].mask == 0 {
			p.wait(a, Wait{Rule: WaitLatency, Kind: WaitLatency})
			continue
		}
		if !p.sizeFeasible(int(p.nodes[a].size)) {
			p.wait(a, Wait{Rule: WaitInterval, Kind: WaitInterval, Short: true})
			continue
		}
		if p.greedy && p.greedyPairs(a) {
			continue
		}
		p.ratingWindow(a)
	}
}

// sizeFeasible reports whether the unmatched tickets, whatever their ratings, could make a
// match with an anchor of s players: it spares the walk of a whole interval when the head
// counts alone rule a match out (a queue of parties of 3 in 5v5). Only up to 2t/c tickets
// of c players can be in one match, so the answer changes only when a count falls below
// that, which clears the cache.
func (p *pass) sizeFeasible(s int) bool {
	if c := p.feasible[s]; c != 0 {
		return c > 0
	}
	t := p.t
	d := p.hs.one(s)
	for c := 1; c <= t; c++ {
		k := p.count[c]
		if c == s {
			k--
		}
		for range min(k, 2*t/c) {
			p.hs.add(&d, c)
		}
	}
	ok := p.hs.complete(&d)
	p.feasible[s] = -1
	if ok {
		p.feasible[s] = 1
	}
	return ok
}

// dist is the distance of two ratings, computed one way for every comparison.
func dist(a, b float64) float64 {
	if a < b {
		return b - a
	}
	return a - b
}
