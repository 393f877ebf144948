package queueleader

import (
	"context"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A match function's backoff goes with the queue, not with its leader: a new leader (after a
// deploy, a replica's death, a lease lost) takes on the backoff its predecessor published
// with the queue's stats (Stats.FunctionBackoff, every StatsPublish), so that a dead function
// is called at most once per backoff step however often the leadership moves. A failure in
// the last StatsPublish before a leader's death may be lost; the new leader then calls once
// more, a step early: the same as one call per leader change, no worse.

// published is the backoff to publish, nil when the last call did not fail.
func (st *functionState) published() *queue.FunctionBackoff {
	if st == nil || st.failures == 0 {
		return nil
	}
	return &queue.FunctionBackoff{Failures: st.failures, Next: st.next, Last: st.last}
}

// takeBackoff starts a leadership of q with the backoff the last leader of the queue (or of
// the runner's partition) published. Its next call is not put later than one backoff step
// from now: a predecessor whose clock ran ahead does not silence the function for longer.
func (r *Runner) takeBackoff(ctx context.Context, q queue.Queue) {
	if q.MatchFunction == nil {
		return
	}
	b := r.publishedBackoff(ctx, q)
	if b == nil || b.Failures <= 0 {
		return
	}
	now := r.deps.Clock.Now()
	next := b.Next
	if limit := now.Add(functionBackoff(q.Tick, b.Failures)); next.After(limit) {
		next = limit
	}
	r.fn = &functionState{failures: b.Failures, next: next, last: b.Last}
}

// publishedBackoff reads the backoff the last leader published, nil when none or when it
// cannot be read (the new leader then starts afresh, as it did before backoffs were shared).
func (r *Runner) publishedBackoff(ctx context.Context, q queue.Queue) *queue.FunctionBackoff {
	published, err := r.deps.Store.PublishedStats(ctx, q.Name)
	if err != nil {
		return nil
	}
	for _, st := range published {
		if st.Partition == r.part {
			return st.FunctionBackoff
		}
	}
	return nil
}
