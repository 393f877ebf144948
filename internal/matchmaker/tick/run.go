package tick

import (
	"math"
	"slices"
	"strconv"
	"sync"

	"matchmaker/internal/apperr"
	"matchmaker/internal/matchmaker/pairing"
)

// Run makes one pass over the waiting tickets at time now (seconds, on the tickets' clock)
// and returns the matches to make and the tickets that expired. It reads no clock and
// keeps no state: the same input gives the same result.
//
// Expiry: a ticket expires when now >= ExpiresAt (a ticket lives in [WaitingSince,
// ExpiresAt)); it is reported in Expired and never matched.
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
// Teams: the most even split of the match's tickets, parties whole (the least |difference
// of team totals| over every split, the anchor's team being team 0; sums in float64, so
// "least" holds up to rounding), then each team sorted by rating and paired in order.
//
// Errors: an apperr.Invalid error naming every invalid field of cfg (see Config.Validate),
// now, and of the tickets as tickets[i].field (see Ticket.Validate); a pass with more than
// MaxRegions region names is invalid too (tickets[i].latencies[j].region).
//
// Cost: O(N log N) with a radix sort for N tickets, plus for each anchor the tickets within
// its interval walked until a match forms (a handful in a dense queue) and the exact split
// (2^(m-1) steps for m tickets up to 12, meet in the middle above).
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
		}
		return Result{}, f.Err()
	}
	if len(tickets) > math.MaxInt32 {
		return Result{}, apperr.New(apperr.TooLarge, "at most %d tickets in one pass", math.MaxInt32)
	}
	p := passes.Get().(*pass)
	defer p.release()
	// init checks the tickets as it reads them: a ticket's ratings and latencies are read
	// from memory once, the expensive part of reading 100,000 tickets.
	if err := p.init(tickets, now, cfg, &f); err != nil {
		return Result{}, err
	}
	p.run()
	return Result{Matches: p.matches, Expired: p.expired}, nil
}

// passes keep a pass's buffers from one call to the next: the queue service runs a pass
// of the same queue every tick, and a pass of 100,000 tickets needs about 10 MB of them.
var passes = sync.Pool{New: func() any { return new(pass) }}

// release drops what the pass holds of the caller's (the result, region names) and pools
// it.
func (p *pass) release() {
	p.matches, p.expired, p.ids, p.slots, p.pairs, p.regionNames = nil, nil, nil, nil, nil, nil
	passes.Put(p)
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

// row is a set of head counts (x, y), x players on the anchor's team and y on the other:
// bit y of row[x]. Both are at most TeamSize.
type row [MaxTeamSize + 1]uint32

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
	full        uint32 // head counts 0..t
	greedy      bool
	latency     bool
	regionNames []string // sorted: a region's id is its index

	// by rank
	byRank  []int32 // input index
	posOf   []int32
	mean    []float64
	ivK     []float64
	limitK  []float64 // current latency limit
	sizeK   []uint8
	ratOffK []int32   // the players' ratings are ratK[ratOffK[k]:ratOffK[k+1]]
	ratK    []float64 //
	latOffK []int32   // with latency, the ticket's latencies are latK[latOffK[k]:latOffK[k+1]]
	latK    []latency // with region ids in order of first sight

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
	dp      []row   // per region
	walk    []int32 // acceptable candidates, nearest first
	need    []row
	chosen  []int32
	best    []int32
	touched []int32
	sp      splitter
	members [2][]member

	// the result
	matches []Match
	expired []Expiry
	ids     []int // backing of every Match.Tickets
	slots   []Slot
	pairs   []Pair
}

// node is what the searches read of a live ticket, at its position: a walk reads one
// cache line per ticket rather than one per array.
type node struct {
	key        float64 // mean rating
	iv         float64 // current interval
	mask       uint64  // regions the ticket accepts now (bit 0 alone without latency)
	prev, next int32   // unmatched positions, -1 at the ends
	rank       int32
	in         int32 // input index
	rat        int32 // its players' ratings are rat[rat : rat+size]
	lat        int32 // its latencies are lat[lat : lat+nlat]
	size       uint8 // players
	nlat       uint8
	state      uint8
}

// latency is a ticket's latency to the region of id region.
type latency struct {
	ms     float64
	region uint8
}

func (p *pass) init(tickets []Ticket, now float64, cfg Config, f *apperr.Fields) error {
	p.t, p.full = cfg.TeamSize, 1<<(cfg.TeamSize+1)-1
	p.greedy, p.latency = cfg.Strategy == GreedyPairs, len(cfg.MaxLatency) > 0
	p.count, p.feasible = [MaxTeamSize + 1]int{}, [MaxTeamSize + 1]int8{}
	n := len(tickets)

	// Age order; the queue service keeps its tickets in arrival order, so usually no sort.
	// (An invalid WaitingSince sorts somewhere and is reported below.)
	age := resize(p.byRank, n)
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
	live := 0
	for _, i := range age {
		if now >= tickets[i].ExpiresAt {
			continue
		}
		age[live] = i
		live++
	}
	p.byRank = age[:live]
	if live < n {
		p.expired = make([]Expiry, 0, n-live)
		for i := range tickets {
			if now >= tickets[i].ExpiresAt {
				tickets[i].addFaults(f, i, p.t)
				p.expired = append(p.expired, Expiry{Ticket: i, Reason: ReasonTTL})
			}
		}
	}

	// By rank, every live ticket read once, in age order (usually the input's).
	p.mean = resize(p.mean, live)
	p.ivK = resize(p.ivK, live)
	p.sizeK = resize(p.sizeK, live)
	p.ratOffK = resize(p.ratOffK, live+1)
	p.ratK = p.ratK[:0]
	var ids map[string]int
	var last []RegionLatency // the previous ticket's latencies: tickets mostly list the same regions
	var lastID []latency
	if p.latency {
		ids = make(map[string]int)
		p.limitK = resize(p.limitK, live)
		p.latOffK = resize(p.latOffK, live+1)
		p.latK = p.latK[:0]
	}
	for k, i := range p.byRank {
		t := &tickets[i]
		t.addFaults(f, int(i), p.t)
		s := 0.0
		for _, r := range t.Ratings {
			s += r
		}
		p.mean[k] = s / float64(len(t.Ratings))
		p.ivK[k] = current(cfg.Interval, now-t.WaitingSince)
		p.sizeK[k] = uint8(len(t.Ratings))
		p.ratOffK[k] = int32(len(p.ratK))
		p.ratK = append(p.ratK, t.Ratings...)
		if !p.latency {
			continue
		}
		p.limitK[k] = current(cfg.MaxLatency, now-t.WaitingSince)
		p.latOffK[k] = int32(len(p.latK))
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
			last, lastID = t.Latencies, p.latK[p.latOffK[k]:]
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	players := len(p.ratK)
	p.ratOffK[live] = int32(players)
	var rename [MaxRegions]uint8
	all := uint64(1)
	if p.latency {
		p.latOffK[live] = int32(len(p.latK))
		all = p.names(ids, &rename)
	}
	p.rank = resize(p.rank, live)
	pairing.SortIndex(p.mean, p.rank)

	// By position.
	p.posOf = resize(p.posOf, live)
	p.nodes = resize(p.nodes, live)
	p.rat = resize(p.rat, players)
	p.lat = resize(p.lat, len(p.latK))
	rat, lat := int32(0), int32(0)
	for pos, k := range p.rank {
		p.posOf[k] = int32(pos)
		sz := p.sizeK[k]
		x := node{key: p.mean[k], iv: p.ivK[k], mask: 1, prev: int32(pos) - 1, next: int32(pos) + 1,
			rank: k, in: p.byRank[k], rat: rat, size: sz}
		for j := range int32(sz) {
			p.rat[rat+j] = p.ratK[p.ratOffK[k]+j]
		}
		rat += int32(sz)
		p.count[sz]++
		if p.latency {
			// The regions within the ticket's current limit, or all of them without data.
			x.lat, x.mask = lat, all
			lo, hi := p.latOffK[k], p.latOffK[k+1]
			if hi > lo {
				x.mask = 0
			}
			for _, l := range p.latK[lo:hi] {
				l.region = rename[l.region]
				p.lat[lat] = l
				lat++
				if l.ms <= p.limitK[k] {
					x.mask |= 1 << l.region
				}
			}
			x.nlat = uint8(hi - lo)
		}
		p.nodes[pos] = x
	}
	if live > 0 {
		p.nodes[live-1].next = -1
	}
	if p.greedy {
		p.tree.init(p.rank)
	}

	p.dp = resize(p.dp, max(len(p.regionNames), 1))
	maxMatches := players / (2 * p.t)
	p.matches = make([]Match, 0, maxMatches)
	p.ids = make([]int, 0, maxMatches*2*p.t)
	p.slots = make([]Slot, 0, maxMatches*2*p.t)
	p.pairs = make([]Pair, 0, maxMatches*p.t)
	return nil
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
	for _, a := range p.posOf {
		if p.nodes[a].state != waiting || p.nodes[a].mask == 0 || !p.sizeFeasible(int(p.nodes[a].size)) {
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
	var d row
	d[s] = 1
	for c := 1; c <= t; c++ {
		k := p.count[c]
		if c == s {
			k--
		}
		for range min(k, 2*t/c) {
			p.add(&d, c)
		}
	}
	ok := d[t]>>t&1 != 0
	p.feasible[s] = -1
	if ok {
		p.feasible[s] = 1
	}
	return ok
}

// add places a ticket of s players on either team in every state of d.
func (p *pass) add(d *row, s int) {
	for x := p.t; x >= 0; x-- {
		v := d[x]
		nv := v | v<<s&p.full
		if x >= s {
			nv |= d[x-s]
		}
		d[x] = nv
	}
}

// then is the states reached from d by placing a ticket of s players on either team.
func (p *pass) then(d *row, s int) (n row) {
	for x := 0; x <= p.t; x++ {
		v := d[x] << s & p.full
		if x >= s {
			v |= d[x-s]
		}
		n[x] = v
	}
	return n
}

func (p *pass) complete(d *row) bool { return d[p.t]>>p.t&1 != 0 }

// dist is the distance of two ratings, computed one way for every comparison.
func dist(a, b float64) float64 {
	if a < b {
		return b - a
	}
	return a - b
}
