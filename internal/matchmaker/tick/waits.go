package tick

import (
	"fmt"
	"math/bits"
	"strconv"
)

// Wait says why a ticket that anchored a search found no match: the first rule that
// stopped it. The rules are tried in a fixed order, the built-in ones first (interval,
// latency), then the queue's in their order; a candidate is stopped by the first one it
// fails against the anchor. The rule named is the first after which the candidates left
// cannot make a match by their head counts alone; if they can, the rule whose classes
// (classes.go) they share none of, or when each rule alone leaves a match, the last such
// rule (they fail together); and for an anchor whose search found matches that a rule
// judged on the match turned down, the rule that turned down the first. An equal rule that
// partitions the walks (an equal rule binding at any wait, the first such) is named instead
// of the interval: the walk met only the candidates of the anchor's value.
type Wait struct {
	Ticket    int    // input index
	Rule      string // WaitInterval, WaitLatency or a Rule's Name
	Kind      string // WaitInterval, WaitLatency or the rule's Kind
	Attribute string // the rule's attribute, if it reads one
	// Candidates are the tickets the rule was left to judge: those within the anchor's
	// interval that passed the rules before it; for an equal rule, those of them with the
	// anchor's value; for a match turned down, the match's tickets beside the anchor.
	Candidates int
	// Found: the rule turned down a match the search found, whose spread (a distance
	// rule's values, or the teams' average ratings) was Value, over Tolerance.
	Found            bool
	Value, Tolerance float64
	// Short (interval): the queue's searching tickets, whatever their ratings, hold too
	// few players of the sizes a match needs.
	Short bool
	// Role (teams): the role too few searching players play for the shape's compositions.
	Role string
}

// Detail is the reason in a sentence, e.g. "no maps common to 9 candidates". It is built
// on demand: a pass of a large queue leaves thousands of tickets waiting.
func (w Wait) Detail() string {
	n := strconv.Itoa(w.Candidates) + " candidates"
	if w.Candidates == 1 {
		n = "1 candidate"
	}
	switch w.Kind {
	case WaitInterval:
		if w.Short {
			return "too few players searching in the queue for a match"
		}
		if w.Candidates == 0 {
			return "no candidate within the interval"
		}
		return n + " within the interval: too few for a match"
	case WaitLatency:
		if w.Candidates == 0 {
			return "no region within the ticket's latency limit"
		}
		return "no region common to " + n
	case RuleEqual:
		return fmt.Sprintf("only %s with the same %s", n, w.Attribute)
	case RuleIntersect:
		if w.Candidates == 0 {
			return fmt.Sprintf("the ticket's %s hold fewer values than the rule's min_common", w.Attribute)
		}
		return fmt.Sprintf("no %s common to %s", w.Attribute, n)
	case RuleDistance:
		if w.Found {
			return fmt.Sprintf("%s spread %g over the tolerance %g in the match found", w.Attribute, w.Value, w.Tolerance)
		}
		return fmt.Sprintf("%s too far apart among %s", w.Attribute, n)
	case RuleTeamBalance:
		return fmt.Sprintf("team averages differ by %g, over the tolerance %g in the match found", w.Value, w.Tolerance)
	case RulePartyMix:
		return fmt.Sprintf("the teams' largest parties differ by %g players, over the %g allowed, in the match found", w.Value, w.Tolerance)
	case WaitTeams:
		if w.Role != "" {
			return "too few players searching who play " + w.Role + " for the teams' compositions"
		}
		return "the " + n + " that passed every rule cannot fill the teams (party sizes, role composition)"
	}
	return w.Rule
}

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
func (p *pass) wait(a int32, x Wait) {
	x.Ticket = int(p.nodes[a].in)
	p.waits, p.waitPos = append(p.waits, x), append(p.waitPos, a)
}

// stageWait is the Wait naming stage s.
func (p *pass) stageWait(s int, candidates int) Wait {
	switch s {
	case stageInterval:
		return Wait{Rule: WaitInterval, Kind: WaitInterval, Candidates: candidates}
	case stageLatency:
		return Wait{Rule: WaitLatency, Kind: WaitLatency, Candidates: candidates}
	}
	r := p.rules[s-stageRules].rule
	return Wait{Rule: r.Name, Kind: r.Kind, Attribute: r.Attribute, Candidates: candidates}
}

// waitZero records an anchor that a rule rules out whatever the candidates (anchorClasses
// returned 0).
func (p *pass) waitZero(a int32) {
	p.wait(a, p.stageWait(stageRules+p.zeroRule, 0))
}

// explain records why anchor a, whose walk met the candidates w (in the classes wm) and
// turned away rej, found no match. It runs for the anchors that wait only.
func (p *pass) explain(a int32, w []int32, wm []uint64, rej []rejection) {
	if p.turnedDown.Rule != "" {
		p.wait(a, p.turnedDown)
		return
	}
	stages := stageRules + len(p.rules)
	// dp[s]: the head counts the anchor reaches with the candidates that passed stages
	// 0..s, built from the last stage down.
	var dp [stageRules + MaxRules]heads
	last := p.hs.one(int(p.nodes[a].size))
	for _, c := range w {
		p.hs.add(&last, int(p.nodes[c].size))
	}
	counts := [stageRules + MaxRules]int{}
	for _, r := range rej {
		counts[r.stage]++
	}
	dp[stages-1] = last
	for s := stages - 2; s >= 0; s-- {
		dp[s] = dp[s+1]
		for _, r := range rej {
			if int(r.stage) == s+1 {
				p.hs.add(&dp[s], int(p.nodes[r.pos].size))
			}
		}
	}
	judged := len(w) + len(rej) // candidates stage s judged
	for s := range stages {
		if !p.hs.complete(&dp[s]) {
			switch {
			case s == stageInterval && p.part >= 0 && judged-counts[s] == 0 && p.partitionHasOthers(a):
				// Tickets of the anchor's value search, and none is within the interval:
				// the interval's doing, not the rule's.
				p.wait(a, p.stageWait(s, judged))
			case s == stageInterval && p.part >= 0:
				// The walk met the candidates of the anchor's value only (partition): too
				// few of them is the rule's doing as much as the interval's.
				p.wait(a, p.stageWait(stageRules+p.part, judged-counts[s]))
			case s >= stageRules && p.rules[s-stageRules].rule.Kind == RuleEqual:
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
	if p.latency && p.noClass(a, w, func(c int32) uint64 { return p.nodes[c].mask & an.mask }) {
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
func (p *pass) partitionHasOthers(a int32) bool { return p.pprev[a] >= 0 || p.pnext[a] >= 0 }

// noClass reports whether no class of one rule (the classes of each candidate by mask)
// holds a match of the anchor and the candidates w.
func (p *pass) noClass(a int32, w []int32, mask func(int32) uint64) bool {
	var dp [MaxClasses]heads
	var seen uint64
	for _, c := range w {
		for m := mask(c); m != 0; m &= m - 1 {
			k := bits.TrailingZeros64(m)
			if seen>>k&1 == 0 {
				seen |= 1 << k
				dp[k] = p.hs.one(int(p.nodes[a].size))
			}
			p.hs.add(&dp[k], int(p.nodes[c].size))
			if p.hs.complete(&dp[k]) {
				return false
			}
		}
	}
	return true
}

// ruleIndex is the index of the dimension's rule in the config.
func (x *dim) ruleIndex(p *pass) int {
	for i := range p.rules {
		if &p.rules[i] == x.d {
			return i
		}
	}
	return -1
}
