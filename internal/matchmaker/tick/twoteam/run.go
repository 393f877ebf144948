package twoteam

import (
	"sync"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
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
	// from memory once, the expensive part of reading 100,000 tickets.
	if err := p.init(tickets, now, cfg, &f); err != nil {
		return matchpool.Result{}, err
	}
	p.run()
	return matchpool.Result{Fills: p.fills, Matches: p.result(), Expired: p.expired, Waiting: p.resultWaits()}, nil
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
		d.rule, d.names, d.attr = nil, nil, matchrules.Attribute{}
		clear(d.strs.Names)
	}
	p.dims = p.dims[:0]
	clear(p.attrs)
	clear(p.attrList)
	p.read = p.read[:0]
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
	t           int
	in          []matchpool.Ticket // the caller's, during Run
	now         float64
	interval    []matchrules.Step
	bf          []int32 // live backfill tickets (input indices), oldest first
	fills       []matchpool.Fill
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

	count    [matchrules.MaxTeamSize + 1]int  // unmatched tickets by size
	feasible [matchrules.MaxTeamSize + 1]int8 // cache of sizeFeasible by anchor size: 0 unknown, 1 yes, -1 no

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
	picks        int            // matches an anchor's walk picked
	turnedDown   matchpool.Wait // the first match of the anchor's walk a rule turned down
	waits        []matchpool.Wait
	waitPos      []int32 // the position of each wait's ticket
	judged       []int32 // scratch of matchAttributes
	read         []readAttr
	attrs        []matchpool.MatchAttribute // of the matches made
	attrList     []string                   // their lists
	attrAt       []int32                    // where each one's list starts in attrList
	vals         []matchrules.Value         // by rank, the values of read

	// the result: the matches made and their parts, copied out at the end
	made    []made
	ids     []int
	slots   []matchpool.Slot
	pairs   []matchpool.Pair
	expired []matchpool.Expiry
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
