package tick

import (
	"math"
	"slices"
	"strconv"

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
// tickets): the anchor takes the nearest acceptable ticket that fits as its opponent; then
// the oldest acceptable ticket not yet taken takes, as its own opponent, the nearest
// ticket acceptable to both of them that fits, and so on until the match is complete. A
// ticket that fits is one after which a match can still be split evenly in head count; a
// ticket that finds no opponent is passed over. When this builds no match the anchor is
// served by rating_window's rule, so an anchor for which a match exists never waits.
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
	teamSize := min(max(cfg.TeamSize, 1), MaxTeamSize) // checks parties even when team_size is wrong
	for i := range tickets {
		tickets[i].addFaults(&f, i, teamSize)
	}
	if err := f.Err(); err != nil {
		return Result{}, err
	}
	if len(tickets) > math.MaxInt32 {
		return Result{}, apperr.New(apperr.TooLarge, "at most %d tickets in one pass", math.MaxInt32)
	}
	p, err := newPass(tickets, now, cfg)
	if err != nil {
		return Result{}, err
	}
	p.run()
	return Result{Matches: p.matches, Expired: p.expired}, nil
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
// prev and next link the positions of the tickets not matched yet, so a walk outward from
// the anchor skips matched tickets in O(1).
type pass struct {
	tickets []Ticket
	t       int
	full    uint32 // head counts 0..t
	greedy  bool
	latency bool
	names   []string // regions, sorted: a region's id is its index

	// by rank
	in     []int32 // input index
	posOf  []int32
	latOff []int32 // with latency: rank k's regions are latID[latOff[k]:latOff[k+1]]
	latID  []uint8

	// by position
	rank       []int32
	key        []float64 // mean rating
	iv         []float64 // current interval
	size       []uint8   // players
	mask       []uint64  // regions the ticket accepts now (bit 0 alone without latency)
	prev, next []int32   // unmatched positions, -1 at the ends
	state      []uint8

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

	matches []Match
	expired []Expiry
	ids     []int // backing of every Match.Tickets
	slots   []Slot
	pairs   []Pair
}

func newPass(tickets []Ticket, now float64, cfg Config) (*pass, error) {
	p := &pass{tickets: tickets, t: cfg.TeamSize, full: 1<<(cfg.TeamSize+1) - 1,
		greedy: cfg.Strategy == GreedyPairs, latency: len(cfg.MaxLatency) > 0}
	n := len(tickets)

	// Age order; the queue service keeps its tickets in arrival order, so usually no sort.
	age := make([]int32, n)
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = tickets[i-1].WaitingSince <= tickets[i].WaitingSince
	}
	if sorted {
		for i := range age {
			age[i] = int32(i)
		}
	} else {
		since := make([]float64, n)
		for i, t := range tickets {
			since[i] = t.WaitingSince
		}
		pairing.SortIndex(since, age)
	}
	live := 0
	for _, i := range age {
		if now >= tickets[i].ExpiresAt {
			continue
		}
		age[live] = i
		live++
	}
	p.in = age[:live]
	if live < n {
		p.expired = make([]Expiry, 0, n-live)
		for i, t := range tickets {
			if now >= t.ExpiresAt {
				p.expired = append(p.expired, Expiry{Ticket: i, Reason: ReasonTTL})
			}
		}
	}

	// Per rank: mean rating, current interval and latency limit, regions.
	mean := make([]float64, live)
	ivByRank := make([]float64, live)
	players := 0
	for k, i := range p.in {
		t := &tickets[i]
		s := 0.0
		for _, r := range t.Ratings {
			s += r
		}
		mean[k] = s / float64(len(t.Ratings))
		ivByRank[k] = current(cfg.Interval, now-t.WaitingSince)
		players += len(t.Ratings)
	}
	maskByRank := make([]uint64, live)
	if p.latency {
		if err := p.regions(now, cfg.MaxLatency, maskByRank); err != nil {
			return nil, err
		}
	} else {
		for k := range maskByRank {
			maskByRank[k] = 1
		}
	}

	// Positions.
	p.rank = make([]int32, live)
	pairing.SortIndex(mean, p.rank)
	p.posOf = make([]int32, live)
	p.key = make([]float64, live)
	p.iv = make([]float64, live)
	p.size = make([]uint8, live)
	p.mask = make([]uint64, live)
	links := make([]int32, 2*live)
	p.prev, p.next = links[:live:live], links[live:]
	p.state = make([]uint8, live)
	for pos, k := range p.rank {
		p.posOf[k] = int32(pos)
		p.key[pos] = mean[k]
		p.iv[pos] = ivByRank[k]
		sz := len(tickets[p.in[k]].Ratings)
		p.size[pos] = uint8(sz)
		p.count[sz]++
		p.mask[pos] = maskByRank[k]
		p.prev[pos] = int32(pos) - 1
		p.next[pos] = int32(pos) + 1
	}
	if live > 0 {
		p.next[live-1] = -1
	}
	if p.greedy {
		p.tree.init(p.rank)
	}

	slots := max(len(p.names), 1)
	p.dp = make([]row, slots)
	maxMatches := players / (2 * p.t)
	p.matches = make([]Match, 0, maxMatches)
	p.ids = make([]int, 0, maxMatches*2*p.t)
	p.slots = make([]Slot, 0, maxMatches*2*p.t)
	p.pairs = make([]Pair, 0, maxMatches*p.t)
	return p, nil
}

// regions names the regions of the live tickets (ids in name order) and sets each live
// ticket's mask: the regions within its current limit, or every region without data.
func (p *pass) regions(now float64, limits []Step, mask []uint64) error {
	ids := make(map[string]int)
	var last []RegionLatency // the previous ticket's latencies: tickets mostly list the same regions
	var lastID []int
	p.latOff = make([]int32, len(p.in)+1)
	total := 0
	for _, i := range p.in {
		total += len(p.tickets[i].Latencies)
	}
	raw := make([]int, 0, total)
	for k, i := range p.in {
		ls := p.tickets[i].Latencies
		for j, l := range ls {
			if j < len(last) && last[j].Region == l.Region {
				raw = append(raw, lastID[j])
				continue
			}
			id, ok := ids[l.Region]
			if !ok {
				if len(ids) == MaxRegions {
					return apperr.Field("tickets["+strconv.Itoa(int(i))+"]."+latencyField(j, "region"),
						"is a region beyond the %d a pass can hold", MaxRegions)
				}
				id = len(ids)
				ids[l.Region] = id
			}
			raw = append(raw, id)
		}
		if len(ls) > 0 {
			last, lastID = ls, raw[len(raw)-len(ls):]
		}
		p.latOff[k+1] = int32(len(raw))
	}
	p.names = make([]string, len(ids))
	for name, id := range ids {
		p.names[id] = name
	}
	slices.Sort(p.names)
	var rename [MaxRegions]uint8
	for id, name := range p.names {
		rename[ids[name]] = uint8(id)
	}
	p.latID = make([]uint8, len(raw))
	for j, id := range raw {
		p.latID[j] = rename[id]
	}
	all := uint64(1)<<len(p.names) - 1
	if len(p.names) == 0 {
		all = 1 // no ticket has data: one region, unnamed, that every ticket accepts
	}
	if len(p.names) == MaxRegions {
		all = math.MaxUint64
	}
	for k, i := range p.in {
		t := &p.tickets[i]
		if len(t.Latencies) == 0 {
			mask[k] = all
			continue
		}
		limit := current(limits, now-t.WaitingSince)
		off := p.latOff[k]
		for j, l := range t.Latencies {
			if l.MS <= limit {
				mask[k] |= 1 << p.latID[off+int32(j)]
			}
		}
	}
	return nil
}

// run is the anchor loop.
func (p *pass) run() {
	for k := range p.rank {
		a := p.posOf[k]
		if p.state[a] != waiting || p.mask[a] == 0 || !p.sizeFeasible(int(p.size[a])) {
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
