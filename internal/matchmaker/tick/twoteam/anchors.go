package twoteam

import (
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// run is the anchor loop.
func (p *pass) run() {
	p.serveBackfills()
	for k, a := range p.positionOf {
		if p.taken[k] {
			continue
		}
		if p.nodes[a].regions == 0 {
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
	if c := p.feasibleBySize[s]; c != 0 {
		return c > 0
	}
	t := p.teamSize
	d := p.heads.one(s)
	for c := 1; c <= t; c++ {
		k := p.unmatchedBySize[c]
		if c == s {
			k--
		}
		for range min(k, 2*t/c) {
			p.heads.add(&d, c)
		}
	}
	ok := p.heads.complete(&d)
	p.feasibleBySize[s] = -1
	if ok {
		p.feasibleBySize[s] = 1
	}
	return ok
}
