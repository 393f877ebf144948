package twoteam

import (
	"math"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/avoid"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/check"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// init reads the tickets into the pass, checking each as it reads it: oldest first, the
// expired and the backfill tickets set apart, each live one read once by rank (age order),
// then gathered by position (rating order) for the searches.
func (p *pass) init(tickets []matchpool.Ticket, now float64, cfg *matchrules.Config, f *apperr.Fields) error {
	p.teamSize = cfg.TeamSize
	if p.heads.teamSize != p.teamSize { // a pooled pass keeps the geometry of its last team size
		p.heads.init(p.teamSize)
	}
	p.greedy, p.latency = cfg.Strategy == matchrules.GreedyPairs, len(cfg.MaxLatency) > 0
	p.unmatchedBySize, p.feasibleBySize = [matchrules.MaxTeamSize + 1]int{}, [matchrules.MaxTeamSize + 1]int8{}
	p.orderByAge(tickets)
	p.setApart(tickets, now, cfg, f)
	var regions regionReader // made here: a map that does not leave init stays off the heap
	if p.latency {
		regions.ids = make(map[string]int)
	}
	avoiding, err := p.readByRank(tickets, now, cfg, f, &regions)
	if err != nil {
		return err
	}
	p.avoid = nil
	if avoiding {
		p.avoid = avoid.Read(tickets, p.byAge, now, cfg)
	}
	p.gatherByPosition(regions.ids)
	if p.greedy {
		p.oldest.init(p.rankAt)
	}
	p.tickets, p.now, p.interval = tickets, now, cfg.Interval
	p.reach = scratch.Resize(p.reach, MaxClasses)
	p.waits, p.waitPos = p.waits[:0], p.waitPos[:0]
	p.readRules(tickets, cfg)
	p.made, p.matchTickets, p.matchSlots, p.matchPairs = p.made[:0], p.matchTickets[:0], p.matchSlots[:0], p.matchPairs[:0]
	p.matchAttrs, p.matchLists, p.matchListAt = p.matchAttrs[:0], p.matchLists[:0], p.matchListAt[:0]
	return nil
}

// orderByAge sets p.byAge to every ticket's input index, oldest first; the queue service
// keeps its tickets in arrival order, so usually no sort. (An invalid WaitingSince sorts
// somewhere and is reported with the ticket.)
func (p *pass) orderByAge(tickets []matchpool.Ticket) {
	n := len(tickets)
	age := scratch.Resize(p.byAge, n)
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = tickets[i-1].WaitingSince <= tickets[i].WaitingSince
	}
	if sorted {
		for i := range age {
			age[i] = int32(i)
		}
	} else {
		p.waitingSince = scratch.Resize(p.waitingSince, n)
		for i, t := range tickets {
			p.waitingSince[i] = t.WaitingSince
		}
		pairing.SortIndex(p.waitingSince, age)
	}
	p.byAge = age
}

// setApart keeps in p.byAge the live tickets that search, oldest first, and sets the others
// apart: the backfill tickets (p.backfills, served first and never a candidate) and the expired
// ones (p.expired, by input index), which it checks.
func (p *pass) setApart(tickets []matchpool.Ticket, now float64, cfg *matchrules.Config, f *apperr.Fields) {
	widest := -1.0 // the widest latency limit: a ticket with data and no region within it never matches
	if p.latency {
		widest = cfg.MaxLatency[len(cfg.MaxLatency)-1].Value
	}
	live := 0
	p.backfills = p.backfills[:0]
	for _, i := range p.byAge {
		if matchpool.ExpiryReason(&tickets[i], now, widest) != "" {
			continue
		}
		if tickets[i].Backfill != nil {
			tickets[i].AddFaults(f, int(i), p.teamSize)
			check.Attributes(f, cfg, &tickets[i], int(i))
			p.backfills = append(p.backfills, i)
			continue
		}
		p.byAge[live] = i
		live++
	}
	p.byAge = p.byAge[:live]
	if live+len(p.backfills) == len(tickets) {
		return
	}
	p.expired = make([]matchpool.Expiry, 0, len(tickets)-live)
	for i := range tickets {
		if why := matchpool.ExpiryReason(&tickets[i], now, widest); why != "" {
			tickets[i].AddFaults(f, i, p.teamSize)
			check.Attributes(f, cfg, &tickets[i], i)
			p.expired = append(p.expired, matchpool.Expiry{Ticket: i, Reason: why})
		}
	}
}

// readByRank reads every live ticket once, in age order (usually the input's), checking it:
// what the searches need of it into p.byRank and its sort key into p.means, by rank; a
// party's ratings into p.rankRatings and the latencies into p.rankLatencies, their regions
// numbered by regions. avoiding: some ticket has an avoid list.
func (p *pass) readByRank(tickets []matchpool.Ticket, now float64, cfg *matchrules.Config, f *apperr.Fields,
	regions *regionReader) (avoiding bool, err error) {
	live := len(p.byAge)
	p.means = scratch.Resize(p.means, live)
	p.byRank = scratch.Resize(p.byRank, live)
	p.rankRatings, p.rankLatencies = p.rankRatings[:0], p.rankLatencies[:0]
	attributes := len(cfg.Rules) > 0 || len(cfg.Attributes) > 0
	if attributes {
		p.declare(cfg)
	}
	for k, i := range p.byAge {
		t := &tickets[i]
		t.AddFaults(f, int(i), p.teamSize)
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
		x := info{mean: s / float64(len(t.Ratings)), interval: matchrules.Current(cfg.Interval, now-t.WaitingSince),
			total: s, input: i, size: uint8(len(t.Ratings))}
		if len(t.Ratings) > 1 {
			x.ratingsAt = int32(len(p.rankRatings))
			p.rankRatings = append(p.rankRatings, t.Ratings...)
		}
		if p.latency {
			x.latencyLimit = matchrules.Current(cfg.MaxLatency, now-t.WaitingSince)
			x.latenciesAt, x.latencyCount = int32(len(p.rankLatencies)), uint8(len(t.Latencies))
			p.rankLatencies = regions.read(p.rankLatencies, t.Latencies, int(i), f)
		}
		p.means[k] = x.mean
		p.byRank[k] = x
		avoiding = avoiding || len(t.Avoid) > 0
	}
	return avoiding, f.Err()
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

// gatherByPosition sorts the live tickets by rating (p.rankAt: the rank at each position)
// and gathers what the searches read of each into its node by position, its party's
// ratings and its latencies beside its neighbours', so that a match reads memory near its
// anchor rather than all over the input. ids are the regions (readByRank's).
func (p *pass) gatherByPosition(ids map[string]int) {
	var rename [matchpool.MaxRegions]uint8
	all := uint64(1)
	if p.latency {
		all = p.names(ids, &rename)
	}
	live := len(p.byAge)
	p.rankAt = scratch.Resize(p.rankAt, live)
	pairing.SortIndex(p.means, p.rankAt)
	p.positionOf = scratch.Resize(p.positionOf, live)
	p.taken = scratch.Resize(p.taken, live)
	clear(p.taken)
	p.nodes = scratch.Resize(p.nodes, live)
	p.ratings = scratch.Resize(p.ratings, len(p.rankRatings))
	p.latencies = scratch.Resize(p.latencies, len(p.rankLatencies))
	rat, lat := int32(0), int32(0)
	for pos, k := range p.rankAt {
		p.positionOf[k] = int32(pos)
		in := &p.byRank[k]
		x := node{rating: in.mean, interval: in.interval, regions: 1, prev: int32(pos) - 1, next: int32(pos) + 1,
			rank: k, input: in.input, total: in.total, size: in.size}
		p.unmatchedBySize[in.size]++
		if in.size > 1 {
			x.ratingsAt = rat
			rat += int32(copy(p.ratings[rat:], p.rankRatings[in.ratingsAt:in.ratingsAt+int32(in.size)]))
		}
		if p.latency {
			// The regions within the ticket's current limit, or all of them without data.
			x.latenciesAt, x.latencyCount, x.regions = lat, in.latencyCount, all
			if in.latencyCount > 0 {
				x.regions = 0
			}
			for _, l := range p.rankLatencies[in.latenciesAt : in.latenciesAt+int32(in.latencyCount)] {
				l.region = rename[l.region]
				p.latencies[lat] = l
				lat++
				if l.ms <= in.latencyLimit {
					x.regions |= 1 << l.region
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
