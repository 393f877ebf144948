package twoteam

import (
	"math/bits"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// The stages of a walk's rejections: the interval, latency, then rule i at stageRules+i.
const (
	stageInterval = 0
	stageLatency  = 1
	stageRules    = 2
)

// rejection is a candidate the walk turned away, and at which stage.
type rejection struct {
	pos   int32
	stage int32
}

// wait records why the ticket at a waits.
func (p *pass) wait(a int32, x matchpool.Wait) {
	x.Ticket = int(p.nodes[a].input)
	p.waits, p.waitPos = append(p.waits, x), append(p.waitPos, a)
}

// stageWait is the Wait naming stage s.
func (p *pass) stageWait(s int, candidates int) matchpool.Wait {
	switch s {
	case stageInterval:
		return matchpool.Wait{Rule: matchrules.WaitInterval, Kind: matchrules.WaitInterval, Candidates: candidates}
	case stageLatency:
		return matchpool.Wait{Rule: matchrules.WaitLatency, Kind: matchrules.WaitLatency, Candidates: candidates}
	}
	if s == p.stageAvoid() {
		return matchpool.Wait{Rule: matchrules.WaitAvoid, Kind: matchrules.WaitAvoid, Candidates: candidates}
	}
	r := p.rules[s-stageRules].rule
	return matchpool.Wait{Rule: r.Name, Kind: r.Kind, Attribute: r.Attribute, Candidates: candidates}
}

// waitZero records an anchor that a rule rules out whatever the candidates (anchorClasses
// returned 0).
func (p *pass) waitZero(a int32) {
	p.wait(a, p.stageWait(stageRules+p.excludingRule, 0))
}

// explain records why anchor a, whose walk met the candidates w (in the classes wm) and
// turned away rej, found no match. It runs for the anchors that wait only.
func (p *pass) explain(a int32, w []int32, wm []uint64, rej []rejection) {
	if p.turnedDown.Rule != "" {
		p.wait(a, p.turnedDown)
		return
	}
	stages := stageRules + len(p.rules)
	if p.avoid != nil && !p.avoid.Team {
		stages++ // stageAvoid
	}
	// dp[s]: the head counts the anchor reaches with the candidates that passed stages
	// 0..s, built from the last stage down.
	var dp [stageRules + matchrules.MaxRules + 1]headSet
	last := p.heads.one(int(p.nodes[a].size))
	for _, c := range w {
		p.heads.add(&last, int(p.nodes[c].size))
	}
	counts := [stageRules + matchrules.MaxRules + 1]int{}
	for _, r := range rej {
		counts[r.stage]++
	}
	dp[stages-1] = last
	for s := stages - 2; s >= 0; s-- {
		dp[s] = dp[s+1]
		for _, r := range rej {
			if int(r.stage) == s+1 {
				p.heads.add(&dp[s], int(p.nodes[r.pos].size))
			}
		}
	}
	judged := len(w) + len(rej) // candidates stage s judged
	for s := range stages {
		if !p.heads.complete(&dp[s]) {
			switch {
			case s == stageInterval && p.partitionRule >= 0 && judged-counts[s] == 0 && p.partitionHasOthers(a):
				// Tickets of the anchor's value search, and none is within the interval:
				// the interval's doing, not the rule's.
				p.wait(a, p.stageWait(s, judged))
			case s == stageInterval && p.partitionRule >= 0:
				// The walk met the candidates of the anchor's value only (partition): too
				// few of them is the rule's doing as much as the interval's.
				p.wait(a, p.stageWait(stageRules+p.partitionRule, judged-counts[s]))
			case s >= stageRules && s < p.stageAvoid() && p.rules[s-stageRules].rule.Kind == matchrules.RuleEqual:
				p.wait(a, p.stageWait(s, judged-counts[s]))
			default:
				p.wait(a, p.stageWait(s, judged))
			}
			return
		}
		judged -= counts[s]
	}
	// Head counts allow a match at every stage: the candidates share no class. The first
	// rule (latency, then the rules with classes, in order) that alone leaves none.
	an := &p.nodes[a]
	if p.latency && p.noClass(a, w, func(c int32) uint64 { return p.nodes[c].regions & an.regions }) {
		p.wait(a, p.stageWait(stageLatency, len(w)))
		return
	}
	lastStage := stageLatency
	for j := range p.dims {
		x := &p.dims[j]
		if p.noClass(a, w, x.mask) {
			p.wait(a, p.stageWait(stageRules+x.ruleIndex(p), len(w)))
			return
		}
		lastStage = stageRules + x.ruleIndex(p)
	}
	p.wait(a, p.stageWait(lastStage, len(w)))
}

// partitionHasOthers: another unmatched ticket has the anchor's value of the
// partitioning rule.
func (p *pass) partitionHasOthers(a int32) bool { return p.partPrev[a] >= 0 || p.partNext[a] >= 0 }

// noClass reports whether no class of one rule (the classes of each candidate by mask)
// holds a match of the anchor and the candidates w.
func (p *pass) noClass(a int32, w []int32, mask func(int32) uint64) bool {
	var dp [MaxClasses]headSet
	var seen uint64
	for _, c := range w {
		for m := mask(c); m != 0; m &= m - 1 {
			k := bits.TrailingZeros64(m)
			if seen>>k&1 == 0 {
				seen |= 1 << k
				dp[k] = p.heads.one(int(p.nodes[a].size))
			}
			p.heads.add(&dp[k], int(p.nodes[c].size))
			if p.heads.complete(&dp[k]) {
				return false
			}
		}
	}
	return true
}

// ruleIndex is the index of the dimension's rule in the config.
func (x *dim) ruleIndex(p *pass) int {
	for i := range p.rules {
		if &p.rules[i] == x.data {
			return i
		}
	}
	return -1
}
