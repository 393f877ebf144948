package queueleader

import (
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Shadow mode's measure (DESIGN, "Match functions"): over the last ShadowWindow, the built-in
// pass's committed matches beside the match function's checked proposals of the same pools,
// so that a studio compares a function with its rules on live traffic before it switches.

// shadowSample is one match of a side, or a rejection, or a call.
type shadowSample struct {
	at      time.Time
	diff    float64
	waits   []float64 // its tickets' waits in seconds
	reason  queue.RejectReason
	failed  bool
	isCall  bool
	isMatch bool
}

// shadowTracker keeps both sides' samples of the window, oldest first, and when each ticket
// the function's matches took was first counted: a shadow proposal takes no ticket from the
// pool, so the function proposes the tickets the rules leave waiting again at each call; had it
// been live, each would have left at its first match.
type shadowTracker struct {
	rules, function []shadowSample
	counted         map[string]time.Time
}

func (k *shadowTracker) prune(now time.Time) {
	keep := func(s []shadowSample) []shadowSample {
		i := 0
		for i < len(s) && now.Sub(s[i].at) > queue.ShadowWindow {
			i++
		}
		return slices.Delete(s, 0, i)
	}
	k.rules, k.function = keep(k.rules), keep(k.function)
	for id, at := range k.counted {
		if now.Sub(at) > queue.ShadowWindow {
			delete(k.counted, id)
		}
	}
}

// matchSample is a made match's sample: its difference and its tickets' waits, from the pool.
func matchSample(m *queue.Match, created map[string]time.Time, now time.Time) shadowSample {
	s := shadowSample{at: now, diff: m.AverageDifference, isMatch: true}
	for _, id := range m.Tickets() {
		if at, ok := created[id]; ok {
			s.waits = append(s.waits, now.Sub(at).Seconds())
		}
	}
	return s
}

// shadowMeasured records a shadow call's outcome: its made matches and its rejections.
func (r *Runner) shadowMeasured(q queue.Queue, pool []queue.Ticket, made []queue.Match, rejected []queue.Rejection, now time.Time) {
	k := r.shadowTrack()
	created := make(map[string]time.Time, len(pool))
	for i := range pool {
		created[pool[i].ID] = pool[i].CreatedAt
	}
	k.function = append(k.function, shadowSample{at: now, isCall: true})
	if k.counted == nil {
		k.counted = make(map[string]time.Time)
	}
	for i := range made {
		ids := made[i].Tickets()
		if slices.ContainsFunc(ids, func(id string) bool { _, ok := k.counted[id]; return ok }) {
			continue // counted at an earlier call: live, the match would not have been there
		}
		for _, id := range ids {
			k.counted[id] = now
		}
		k.function = append(k.function, matchSample(&made[i], created, now))
	}
	for _, x := range rejected {
		k.function = append(k.function, shadowSample{at: now, reason: x.Reason})
	}
	k.prune(now)
}

// shadowFailed records a shadow call that failed.
func (r *Runner) shadowFailed(now time.Time) {
	k := r.shadowTrack()
	k.function = append(k.function, shadowSample{at: now, isCall: true, failed: true})
	k.prune(now)
}

// shadowRules records the built-in pass's committed matches of a queue in mode shadow.
func (r *Runner) shadowRules(q queue.Queue, list []queue.Ticket, w queue.TickWrite, done queue.TickCommitted, now time.Time) {
	if q.MatchFunction == nil || q.MatchFunction.Mode != queue.FunctionShadow {
		return
	}
	k := r.shadowTrack()
	created := make(map[string]time.Time, len(list))
	for i := range list {
		created[list[i].ID] = list[i].CreatedAt
	}
	stored := make(map[string]bool, len(done.Matches))
	for _, id := range done.Matches {
		stored[id] = true
	}
	for i := range w.Matches {
		if m := &w.Matches[i]; stored[m.ID] && m.BackfillOf == "" {
			k.rules = append(k.rules, matchSample(m, created, now))
		}
	}
	k.prune(now)
}

func (r *Runner) shadowTrack() *shadowTracker {
	if r.shadowK == nil {
		r.shadowK = &shadowTracker{}
	}
	return r.shadowK
}

// stats summarises the window at now.
func (k *shadowTracker) stats(now time.Time) *queue.ShadowStats {
	k.prune(now)
	st := &queue.ShadowStats{Window: queue.ShadowWindow, Rules: summarise(k.rules), Function: summarise(k.function)}
	for _, s := range k.function {
		if s.isCall {
			st.FunctionCalls++
			if s.failed {
				st.FunctionFailed++
			}
		}
	}
	return st
}

func summarise(samples []shadowSample) queue.ShadowSide {
	var side queue.ShadowSide
	var waits []float64
	diff := 0.0
	for _, s := range samples {
		switch {
		case s.isMatch:
			side.Matches++
			side.TicketsMatched += len(s.waits)
			diff += s.diff
			waits = append(waits, s.waits...)
		case s.reason != "":
			if side.Rejected == nil {
				side.Rejected = make(map[queue.RejectReason]int)
			}
			side.Rejected[s.reason]++
		}
	}
	if side.Matches > 0 {
		side.MeanAverageDifference = diff / float64(side.Matches)
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		n := len(waits)
		side.MedianWaitS, side.HasWait = waits[n/2], true
		if n%2 == 0 {
			side.MedianWaitS = (waits[n/2-1] + waits[n/2]) / 2
		}
	}
	return side
}
