package queueleader

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The leader's side of a queue's match function (queue/matchfunction.go): at each tick it sends the
// pool, reads the proposals, checks them (FunctionCheck), and hands the made matches to the
// tick's commit as the built-in pass's are (mode replace); or commits the built-in pass's
// and measures the function's beside them (mode shadow). The call itself is the service's
// (Deps.SendPool: queuesvc/matchfunction_service.go).

// functionState is a leader's record of its queue's match function: the last call's tick
// number, and the failures in a row that hold the next call back.
type functionState struct {
	tick     uint64
	failures int       // in a row
	next     time.Time // no call before it, after a failure
	last     string    // why the last call failed, in words
}

// functionBackoff is the wait after n failures in a row: twice the tick (at least a second)
// after the first, doubling, at most a minute (or two of a slower queue's ticks). A dead
// function is called once per step, not at each tick.
func functionBackoff(tick time.Duration, n int) time.Duration {
	base := max(tick, time.Second)
	limit := max(time.Minute, 2*base)
	d := base
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// functionLeftOut is why the tickets a function's matches left out wait.
const functionLeftOut = "not in the match function's matches"

// pass makes the tick's matches: the built-in pass's, or, when the queue's match function
// makes them (mode replace), the function's that passed the check. When the call fails, the
// built-in pass makes them (on_failure rules) or the tickets wait, saying why (wait). The
// queue's rules still filter the pool: a ticket past its time or out of every region's reach
// expires as it would (functionPool).
func (r *Runner) pass(ctx context.Context, q queue.Queue, list []queue.Ticket, now time.Time) (queue.TickWrite, error) {
	mf := q.MatchFunction
	if mf == nil || mf.Mode != queue.FunctionReplace {
		return r.deps.Matcher.Match(q, list, now)
	}
	expired, pool := functionPool(q, list, now)
	proposals, failure, called := r.callFunction(ctx, q, pool, now)
	if failure != "" && mf.OnFailure == queue.FailureRules {
		return r.deps.Matcher.Match(q, list, now)
	}
	w := queue.TickWrite{Expired: expired}
	why := queue.WaitingOn{Rule: queue.WaitMatchFunction, Detail: failure}
	if failure == "" {
		why.Detail = functionLeftOut
	}
	if failure == "" && called {
		if !r.stillLeading(ctx, q) {
			return queue.TickWrite{}, nil
		}
		w.Matches = r.checkProposals(ctx, q, pool, proposals, now)
	}
	if failure == "" {
		w.Matches = append(w.Matches, r.fills(q, list, expired, w.Matches, now)...)
	}
	w.Waiting = waitingOnFunction(list, expired, w.Matches, why, failure == "")
	if len(pool) == mf.MaxPool && len(pool) < len(list) {
		w.Waiting.BeyondPool(pool, mf.MaxPool)
	}
	return w, nil
}

// shadow is mode shadow's call at a tick, made beside the tick (matchfunction_shadowcall.go):
// the built-in pass's matches are committed and the next tick starts on time however long
// the function takes.
func (r *Runner) shadow(q queue.Queue, list []queue.Ticket, now time.Time) {
	busy := r.collectShadow()
	if q.MatchFunction == nil || q.MatchFunction.Mode != queue.FunctionShadow || !r.leading.Load() {
		return
	}
	if busy {
		r.deps.Metrics.FunctionCalled(CallSkipped, 0)
		return
	}
	_, pool := functionPool(q, list, now)
	req, _, ok := r.beginCall(q, pool, now)
	if ok {
		r.startShadowCall(q, req)
	}
}

// functionPool is what a tick sends its function: the searching tickets, oldest first, at most
// max_pool, but those the tick expires (expired: as the built-in pass would, PassExpiries:
// the queue no longer admits them, their time is up, or no region is within the widest
// latency step) and backfills (whose running matches only the built-in pass fills). The list
// itself when none is left out: a pool is sent as it is, not copied.
func functionPool(q queue.Queue, list []queue.Ticket, now time.Time) (expired []queue.Expiry, pool []queue.Ticket) {
	leaves := queue.PassExpiries(q, list, now)
	for i := range list {
		if why := leaves[list[i].ID]; why != "" {
			expired = append(expired, queue.Expiry{TicketID: list[i].ID, Reason: why})
		}
	}
	out := func(t *queue.Ticket) bool { return t.Backfill != nil || leaves[t.ID] != "" }
	n := min(len(list), q.MatchFunction.MaxPool)
	pool = list[:n]
	for i := range pool {
		if out(&list[i]) {
			pool = make([]queue.Ticket, 0, n)
			for j := range list {
				if len(pool) == n {
					break
				}
				if !out(&list[j]) {
					pool = append(pool, list[j])
				}
			}
			break
		}
	}
	return expired, pool
}

// waitingOnFunction says why each ticket of the list the tick leaves searching waits: on the
// match function, for why; but the backfills, when the built-in pass tried to fill them
// (filled), which say nothing, as in the built-in pass's ticks (its waits are of the tickets
// that anchored a search).
func waitingOnFunction(list []queue.Ticket, expired []queue.Expiry, made []queue.Match, why queue.WaitingOn, filled bool) *queue.Waits {
	gone := leaving(expired, made)
	ids := make([]string, 0, len(list))
	for i := range list {
		if !gone[list[i].ID] && (list[i].Backfill == nil || !filled) {
			ids = append(ids, list[i].ID)
		}
	}
	return queue.SharedWaits(ids, why)
}

// leaving is the tickets a tick expires or matches, by id.
func leaving(expired []queue.Expiry, made []queue.Match) map[string]bool {
	gone := make(map[string]bool, len(expired))
	for _, e := range expired {
		gone[e.TicketID] = true
	}
	for _, m := range made {
		for _, id := range m.Tickets() {
			gone[id] = true
		}
	}
	return gone
}

// fills are the built-in pass's fills of the backfills of list, from the tickets the tick
// leaves searching (neither expired nor in the function's matches, and still searching after
// the call). A function is sent no backfill, so only the pass fills them; its new matches are
// not kept (they are the function's to make), nor its expiries (the tick's are the
// function's pool's). The pass runs only when a backfill searches.
func (r *Runner) fills(q queue.Queue, list []queue.Ticket, expired []queue.Expiry, made []queue.Match, now time.Time) []queue.Match {
	if !slices.ContainsFunc(list, func(t queue.Ticket) bool { return t.Backfill != nil }) {
		return nil
	}
	gone := leaving(expired, made)
	rest := make([]queue.Ticket, 0, len(list))
	for _, t := range list {
		if _, ok := r.waiting[t.ID]; ok && !gone[t.ID] {
			rest = append(rest, t)
		}
	}
	w, err := r.deps.Matcher.Match(q, rest, now)
	if err != nil {
		r.deps.Logger.Warn("queue: the built-in pass over the backfills failed; none is filled at this tick", "queue", q.Name, "err", err)
		return nil
	}
	var fills []queue.Match
	for _, m := range w.Matches {
		if m.BackfillOf != "" {
			fills = append(fills, m)
		}
	}
	return fills
}

// callFunction sends the pool to the queue's function (not while it backs off, nor an empty
// pool) and returns its proposals, or why the call failed (or why none is made), in words,
// and whether a call was made.
func (r *Runner) callFunction(ctx context.Context, q queue.Queue, pool []queue.Ticket, now time.Time) ([]queue.ProposedMatch, string, bool) {
	req, why, ok := r.beginCall(q, pool, now)
	if !ok {
		return nil, why, false
	}
	proposals, detail, err := r.deps.SendPool(ctx, *q.MatchFunction, req)
	r.settleCall(q, now, err, detail)
	if err != nil {
		return nil, detail, true
	}
	return proposals, "", true
}

// beginCall is the request of a call of q's function with pool, and ok; or not ok, while it
// backs off (why says so) or when the pool is empty (why "").
func (r *Runner) beginCall(q queue.Queue, pool []queue.Ticket, now time.Time) (req queue.FunctionRequest, why string, ok bool) {
	if r.fn == nil {
		r.fn = &functionState{}
	}
	st := r.fn
	if now.Before(st.next) {
		r.deps.Metrics.FunctionCalled(CallBackoff, 0)
		return req, fmt.Sprintf("%s (%d failures in a row; the next call in %s)", st.last, st.failures, st.next.Sub(now).Round(time.Millisecond)), false
	}
	if len(pool) == 0 {
		return req, "", false
	}
	// Increasing across leaders too: a new leader's first tick is past the last one's.
	st.tick = max(st.tick+1, uint64(now.UnixMilli()))
	return queue.FunctionRequest{Queue: &q, Tick: st.tick, Now: now, Deadline: now.Add(q.MatchFunction.Timeout), Pool: pool}, "", true
}

// settleCall ends a call made at now: a success ends the backoff, a failure adds a step.
func (r *Runner) settleCall(q queue.Queue, now time.Time, err error, detail string) {
	st := r.fn
	if err == nil {
		st.failures, st.next = 0, time.Time{}
		return
	}
	st.failures++
	st.next, st.last = now.Add(functionBackoff(q.Tick, st.failures)), detail
	r.deps.Logger.Warn("queue: the match function failed", "queue", q.Name, "err", err,
		"failures", st.failures, "next_call_in", st.next.Sub(now))
}

// stillLeading renews the lease after a call long enough to have let it run low, and says
// whether the replica still leads the queue (if not, the tick writes nothing).
func (r *Runner) stillLeading(ctx context.Context, q queue.Queue) bool {
	ls, ok := r.deps.Store.(queue.LeaseStore)
	if !ok || ls.LeaseLeft(r.key) > ls.LeaseRenewal() {
		return true
	}
	return r.lead(ctx, q)
}

// checkProposals checks the function's proposals (mode replace) against the tickets still
// searching after the call (the changes made meanwhile loaded). Rejected ones are counted and
// logged with their tickets; the made matches are returned.
func (r *Runner) checkProposals(ctx context.Context, q queue.Queue, pool []queue.Ticket, proposals []queue.ProposedMatch, now time.Time) []queue.Match {
	c := queue.FunctionCheck{Queue: &q, Pool: pool, Now: now}
	if err := r.load(ctx, q); err != nil {
		r.deps.Logger.Warn("queue: cannot load the changes made during the match function's call", "queue", q.Name, "err", err)
	}
	c.Searching = func(id string) bool { _, ok := r.waiting[id]; return ok }
	made, rejected := c.Check(proposals)
	r.deps.Metrics.FunctionRejected(q.Name, rejected)
	r.logRejections(q, rejected, false)
	return made
}

// logRejections logs the rejected proposals, at most maxRejectionLogs of them.
func (r *Runner) logRejections(q queue.Queue, rejected []queue.Rejection, shadow bool) {
	for i, x := range rejected {
		if i == maxRejectionLogs {
			r.deps.Logger.Warn("queue: more of the match function's proposals rejected", "queue", q.Name, "rejected", len(rejected)-i)
			break
		}
		r.deps.Logger.Warn("queue: the match function's proposal rejected", "queue", q.Name, "shadow", shadow,
			"match", x.Match, "reason", string(x.Reason), "detail", x.Detail, "tickets", x.Tickets)
	}
}

// maxRejectionLogs bounds the log lines of one answer's rejections: the metric counts all.
const maxRejectionLogs = 20

// functionTimeout is the longest a tick of q waits for its match function.
func functionTimeout(q queue.Queue) time.Duration {
	if q.MatchFunction == nil {
		return 0
	}
	return q.MatchFunction.Timeout
}
