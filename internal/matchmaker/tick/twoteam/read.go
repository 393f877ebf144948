package twoteam

import (
	"math"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/check"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// init reads the tickets into the pass, checking each as it reads it: oldest first, the
// expired and the backfill tickets set apart, each live one read once by rank (age order),
// then gathered by position (rating order) for the searches.
func (p *pass) init(tickets []matchpool.Ticket, now float64, cfg *matchrules.Config, f *apperr.Fields) error {
	p.t = cfg.TeamSize
	if p.hs.t != p.t { // a pooled pass keeps the geometry of its last team size
		p.hs.init(p.t)
	}
	p.greedy, p.latency = cfg.Strategy == matchrules.GreedyPairs, len(cfg.MaxLatency) > 0
	p.count, p.feasible = [matchrules.MaxTeamSize + 1]int{}, [matchrules.MaxTeamSize + 1]int8{}
	p.orderByAge(tickets)
	p.setApart(tickets, now, cfg, f)
	regions, err := p.readByRank(tickets, now, cfg, f)
	if err != nil {
		return err
	}
	p.gatherByPosition(regions)
	if p.greedy {
		p.tree.init(p.rank)
	}
	p.in, p.now, p.interval = tickets, now, cfg.Interval
	p.dp = scratch.Resize(p.dp, MaxClasses)
	p.waits, p.waitPos = p.waits[:0], p.waitPos[:0]
	p.readRules(tickets, cfg)
	p.made, p.ids, p.slots, p.pairs = p.made[:0], p.ids[:0], p.slots[:0], p.pairs[:0]
	p.attrs, p.attrList, p.attrAt = p.attrs[:0], p.attrList[:0], p.attrAt[:0]
	return nil
}

// orderByAge sets p.age to every ticket's input index, oldest first; the queue service
// keeps its tickets in arrival order, so usually no sort. (An invalid WaitingSince sorts
// somewhere and is reported with the ticket.)
func (p *pass) orderByAge(tickets []matchpool.Ticket) {
	n := len(tickets)
	age := scratch.Resize(p.age, n)
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = tickets[i-1].WaitingSince <= tickets[i].WaitingSince
	}
	if sorted {
		for i := range age {
			age[i] = int32(i)
		}
	} else {
		p.since = scratch.Resize(p.since, n)
		for i, t := range tickets {
			p.since[i] = t.WaitingSince
		}
		pairing.SortIndex(p.since, age)
	}
	p.age = age
}

// setApart keeps in p.age the live tickets that search, oldest first, and sets the others
// apart: the backfill tickets (p.bf, served first and never a candidate) and the expired
// ones (p.expired, by input index), which it checks.
func (p *pass) setApart(tickets []matchpool.Ticket, now float64, cfg *matchrules.Config, f *apperr.Fields) {
	widest := -1.0 // the widest latency limit: a ticket with data and no region within it never matches
	if p.latency {
		widest = cfg.MaxLatency[len(cfg.MaxLatency)-1].Value
	}
	live := 0
	p.bf = p.bf[:0]
	for _, i := range p.age {
		if matchpool.ExpiryReason(&tickets[i], now, widest) != "" {
			continue
		}
		if tickets[i].Backfill != nil {
			tickets[i].AddFaults(f, int(i), p.t)
			check.Attributes(f, cfg, &tickets[i], int(i))
			p.bf = append(p.bf, i)
			continue
		}
		p.age[live] = i
		live++
	}
	p.age = p.age[:live]
	if live+len(p.bf) == len(tickets) {
		return
	}
	p.expired = make([]matchpool.Expiry, 0, len(tickets)-live)
	for i := range tickets {
		if why := matchpool.ExpiryReason(&tickets[i], now, widest); why != "" {
			tickets[i].AddFaults(f, i, p.t)
			check.Attributes(f, cfg, &tickets[i], i)
			p.expired = append(p.expired, matchpool.Expiry{Ticket: i, Reason: why})
		}
	}
}

// readByRank reads every live ticket once, in age order (usually the input's), checking it:
// what the searches need of it into p.info and its sort key into p.mean, by rank; a
// party's ratings into p.ratK and the latencies into p.latK. It returns the regions named,
// by id in order of first sight.
func (p *pass) readByRank(tickets []matchpool.Ticket, now float64, cfg *matchrules.Config, f *apperr.Fields) (map[string]int, error) {
	live := len(p.age)
	p.mean = scratch.Resize(p.mean, live)
	p.info = scratch.Resize(p.info, live)
	p.ratK, p.latK = p.ratK[:0], p.latK[:0]
	var regions regionReader
	if p.latency {
		regions.ids = make(map[string]int)
	}
	attributes := len(cfg.Rules) > 0 || len(cfg.Attributes) > 0
	if attributes {
		p.declare(cfg)
	}
	for k, i := range p.age {
		t := &tickets[i]
		t.AddFaults(f, int(i), p.t)
		if attributes {
			p.readAttributes(f, cfg, t, int(i))
		}
		if len(t.Roles) > 0 { // a queue of two teams without a shape declares no roles
			check.Roles(f, cfg, t, func(field string) string { return matchpool.TicketField(int(i), field) }, nil)
		}
		s := 0.0
		for _, r := range t.Ratings {
			s += r
		}
		x := info{mean: s / float64(len(t.Ratings)), iv: matchrules.Current(cfg.Interval, now-t.WaitingSince),
			total: s, in: i, size: uint8(len(t.Ratings))}
		if len(t.Ratings) > 1 {
			x.rat = int32(len(p.ratK))
			p.ratK = append(p.ratK, t.Ratings...)
		}
		if p.latency {
			x.limit = matchrules.Current(cfg.MaxLatency, now-t.WaitingSince)
			x.lat, x.nlat = int32(len(p.latK)), uint8(len(t.Latencies))
			p.latK = regions.read(p.latK, t.Latencies, int(i), f)
		}
		p.mean[k] = x.mean
		p.info[k] = x
	}
	return regions.ids, f.Err()
}

// regionReader numbers the regions of the tickets' latencies in order of first sight.
type regionReader struct {
	ids map[string]int
	// the previous ticket's latencies and their ids: tickets mostly list the same regions
	last   []matchpool.RegionLatency
	lastID []latency
}

// read appends ticket i's latencies to out, with their regions' ids.
func (r *regionReader) read(out []latency, lats []matchpool.RegionLatency, i int, f *apperr.Fields) []latency {
	from := len(out)
	for j, l := range lats {
		if j < len(r.last) && r.last[j].Region == l.Region {
			out = append(out, latency{l.MS, r.lastID[j].region})
			continue
		}
		id, ok := r.ids[l.Region]
		switch {
		case ok:
		case len(r.ids) == matchpool.MaxRegions: // the pass fails; id 0 holds the place
			f.Add(matchpool.TicketField(i, matchpool.LatencyField(j, "region")),
				"is a region beyond the %d a pass can hold", matchpool.MaxRegions)
		default:
			id = len(r.ids)
			r.ids[l.Region] = id
		}
		out = append(out, latency{l.MS, uint8(id)})
	}
	if len(lats) > 0 {
		r.last, r.lastID = lats, out[from:]
	}
	return out
}

// gatherByPosition sorts the live tickets by rating (p.rank: the rank at each position)
// and gathers what the searches read of each into its node by position, its party's
// ratings and its latencies beside its neighbours', so that a match reads memory near its
// anchor rather than all over the input. ids are the regions (readByRank's).
func (p *pass) gatherByPosition(ids map[string]int) {
	var rename [matchpool.MaxRegions]uint8
	all := uint64(1)
	if p.latency {
		all = p.names(ids, &rename)
	}
	live := len(p.age)
	p.rank = scratch.Resize(p.rank, live)
	pairing.SortIndex(p.mean, p.rank)
	p.posOf = scratch.Resize(p.posOf, live)
	p.taken = scratch.Resize(p.taken, live)
	clear(p.taken)
	p.nodes = scratch.Resize(p.nodes, live)
	p.rat = scratch.Resize(p.rat, len(p.ratK))
	p.lat = scratch.Resize(p.lat, len(p.latK))
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
}

// names sorts the regions seen (ids in order of first sight), so that a region's id is its
// place in name order: the order ties between regions are broken in. It sets rename (from
// first-sight id to id) and returns the mask of every region, that of a ticket without
// latency data.
func (p *pass) names(ids map[string]int, rename *[matchpool.MaxRegions]uint8) uint64 {
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
	case matchpool.MaxRegions:
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
			p.wait(a, matchpool.Wait{Rule: matchrules.WaitLatency, Kind: matchrules.WaitLatency})
			continue
		}
		if !p.sizeFeasible(int(p.nodes[a].size)) {
			p.wait(a, matchpool.Wait{Rule: matchrules.WaitInterval, Kind: matchrules.WaitInterval, Short: true})
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
