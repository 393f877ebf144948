package twoteam

import (
	"sync"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/avoid"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Run is the pass of tick.Run over a queue of two teams (cfg has no shape), which has
// checked cfg and now: the package's documentation says what it decides. The tickets are
// checked as they are read; an invalid one fails the pass with an apperr.Invalid error
// naming its fields as tickets[i].field.
func Run(tickets []matchpool.Ticket, now float64, cfg *matchrules.Config) (matchpool.Result, error) {
	var f apperr.Fields
	p := passes.Get().(*pass)
	defer p.release()
	// init checks the tickets as it reads them: a ticket's ratings and latencies are read
	// from memory once, the expensive part of reading a large queue.
	if err := p.init(tickets, now, cfg, &f); err != nil {
		return matchpool.Result{}, err
	}
	p.run()
	return matchpool.Result{Fills: p.fills, Matches: p.result(), Expired: p.expired, Waiting: p.resultWaits()}, nil
}

// passes keep a pass's buffers from one call to the next: the queue service runs a pass
// of the same queue every tick, and a large pass needs megabytes of them.
var passes = sync.Pool{New: func() any { return new(pass) }}

// release drops what the pass holds of the caller's (the result, region names) and pools
// it.
func (p *pass) release() {
	p.expired, p.regionNames, p.tickets, p.interval, p.fills, p.avoid = nil, nil, nil, nil, nil, nil
	for i := range p.rules { // what the pass holds of the caller's
		d := &p.rules[i]
		d.rule, d.names, d.attr = nil, nil, matchrules.Attribute{}
		clear(d.interned.Names)
	}
	p.dims = p.dims[:0]
	clear(p.matchAttrs)
	clear(p.matchLists)
	p.readAttrs = p.readAttrs[:0]
	passes.Put(p)
}

// resultWaits copies out the waits of the tickets that still wait: an anchor that found
// no match may have been taken into a later anchor's.
func (p *pass) resultWaits() []matchpool.Wait {
	n := 0
	for _, pos := range p.waitPos {
		if p.nodes[pos].state != matched {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]matchpool.Wait, 0, n)
	for i, x := range p.waits {
		if p.nodes[p.waitPos[i]].state != matched {
			out = append(out, x)
		}
	}
	return out
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
	teamSize    int
	tickets     []matchpool.Ticket // the caller's, during Run
	now         float64
	interval    []matchrules.Step
	backfills   []int32 // live backfill tickets (input indices), oldest first
	fills       []matchpool.Fill
	greedy      bool
	latency     bool
	regionNames []string // sorted: a region's id is its index

	// by rank
	byAge         []int32   // input index
	positionOf    []int32   // position
	taken         []bool    // matched: the anchor loop skips them without reading their nodes
	means         []float64 // the sort's keys
	byRank        []info
	rankRatings   []float64 // parties' ratings, a party's from byRank[k].ratingsAt
	rankLatencies []latency // with region ids in order of first sight

	// by position
	rankAt    []int32 // rank
	nodes     []node
	ratings   []float64 // the players' ratings, by position of their tickets
	latencies []latency // the latencies, by position of their tickets

	waitingSince []float64 // to sort by age when the input is not in age order

	unmatchedBySize [matchrules.MaxTeamSize + 1]int  // unmatched tickets by size
	feasibleBySize  [matchrules.MaxTeamSize + 1]int8 // cache of sizeFeasible by anchor size: 0 unknown, 1 yes, -1 no

	oldest minTree // greedy_pairs: the oldest unmatched ticket in a range of positions

	// scratch of one anchor
	heads    headSpace
	reach    []headSet // per class: the head counts the anchor reaches with the candidates walked
	walked   []int32   // acceptable candidates, nearest first
	needFrom []headSet // choose's: the head counts from which walked[i:] complete a match
	chosen   []int32
	touched  []int32
	splitter splitter
	evener   evener
	// the look-ahead's (balance.go): the candidates its search chooses among, the pick it
	// replaces, whether it held every candidate of the class, and per class of the anchor
	// whether it looked ahead and whether the class is exhausted
	around, solos          []int32
	picked                 []int32
	sawEvery               bool
	lookedAhead, exhausted uint64
	lastOverBound          bool // the last match turned down broke the balance (balanceHolds)
	members                [2][]member

	// rules: what the pass read of each, and the classes of the anchor being served
	hasRules           bool    // the config has rules
	partitionRule      int     // the rule whose value partitions the walks (partition()), -1: none
	partPrev, partNext []int32 // with partitionRule, the links of the unmatched positions of one value
	judgesMatch        bool    // some rule is judged on the match (distance, team_balance, party_mix)
	hasBalanceRule     bool    // a team_balance rule: the default bound (balanceHolds) is off
	rules              []ruleData
	dims               []dim
	classesPerRegion   int    // classes per region of the anchor (1: the classes are the regions)
	classRegions       []int8 // with classesPerRegion > 1, the anchor's regions by id: class k is in classRegions[k/classesPerRegion]
	classSets          []uint64
	classWindows       []window
	excludingRule      int // the rule that rules out the anchor, when anchorClasses returns 0
	walkedClasses      []uint64
	rejected           []rejection
	tries              []try
	picks              int            // matches an anchor's walk picked
	turnedDown         matchpool.Wait // the first match of the anchor's walk a rule turned down
	waits              []matchpool.Wait
	waitPos            []int32 // the position of each wait's ticket
	judged             []int32 // scratch of matchAttributes
	readAttrs          []readAttr
	matchAttrs         []matchpool.MatchAttribute // of the matches made
	matchLists         []string                   // their lists
	matchListAt        []int32                    // where each one's list starts in matchLists

	avoid    *avoid.Pairs // the tickets that may not meet; nil without avoid lists
	apartBuf []int32      // keepApart's

	// the result: the matches made and their parts, copied out at the end
	made         []made
	matchTickets []int
	matchSlots   []matchpool.Slot
	matchPairs   []matchpool.Pair
	expired      []matchpool.Expiry
}

// node is what the searches read of a live ticket, at its position: a walk reads one
// cache line per ticket (64 bytes) rather than one per array.
type node struct {
	rating       float64 // mean rating
	interval     float64 // current interval
	regions      uint64  // regions the ticket accepts now (bit 0 alone without latency)
	prev, next   int32   // unmatched positions, -1 at the ends
	rank         int32
	input        int32   // input index
	total        float64 // sum of the players' ratings
	ratingsAt    int32   // a party's ratings are ratings[ratingsAt : ratingsAt+size]
	latenciesAt  int32   // its latencies are latencies[latenciesAt : latenciesAt+latencyCount]
	size         uint8   // players
	latencyCount uint8
	state        uint8
}

// info is what the pass reads of a live ticket, by rank, to gather by position.
type info struct {
	mean, interval, latencyLimit, total float64 // the current interval and latency limit
	input                               int32
	ratingsAt                           int32 // a party's ratings are rankRatings[ratingsAt : ratingsAt+size]
	latenciesAt                         int32 // its latencies are rankLatencies[latenciesAt : latenciesAt+latencyCount]
	size, latencyCount                  uint8
}

// latency is a ticket's latency to the region of id region.
type latency struct {
	ms     float64
	region uint8
}
