package queueleader

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A shadow call runs beside the ticks, not inside them: the built-in pass's matches are what
// a shadowed queue commits, and a slow function (up to timeout_ms) held each tick, and the
// next, for as long as it took. At most one call is in flight: a tick whose queue's last
// shadow call still runs makes none (counted, outcome skipped). The call's outcome is taken
// by the next tick, on the runner's goroutine, which owns the backoff and the shadow's
// measure: the goroutine of the call touches neither.

// shadowCall is a runner's shadow call in flight, if any.
type shadowCall struct {
	out chan shadowOutcome // nil when none is in flight; buffered, the call never waits
	// done is closed once the call's outcome is sent: what a test waits for before it moves
	// its clock on (ShadowCallDone).
	done atomic.Pointer[chan struct{}]
}

// shadowOutcome is a shadow call's outcome, checked against the pool it was sent.
type shadowOutcome struct {
	q        queue.Queue
	now      time.Time // the tick's that made the call
	fn       *functionState
	track    *shadowTracker // the leader's measure it was made for
	pool     []queue.Ticket
	err      error
	detail   string
	made     []queue.Match
	rejected []queue.Rejection
}

// startShadowCall sends req beside the tick. The pool is copied: the runner's list, whose
// array it may share, is overwritten by the next tick.
func (r *Runner) startShadowCall(q queue.Queue, req queue.FunctionRequest) {
	req.Pool = slices.Clone(req.Pool)
	o := shadowOutcome{q: q, now: req.Now, fn: r.fn, track: r.shadowTrack(), pool: req.Pool}
	out, done := make(chan shadowOutcome, 1), make(chan struct{})
	r.shadowC.out = out
	r.shadowC.done.Store(&done)
	ctx := r.ctx
	r.done.Go(func() {
		defer close(done)
		var proposals []queue.ProposedMatch
		proposals, o.detail, o.err = r.deps.SendPool(ctx, *q.MatchFunction, req)
		if o.err == nil {
			c := queue.FunctionCheck{Queue: &o.q, Pool: o.pool, Now: o.now}
			o.made, o.rejected = c.Check(proposals)
			r.deps.Metrics.FunctionRejected(q.Name, o.rejected)
			r.logRejections(q, o.rejected, true)
		}
		out <- o
	})
}

// collectShadow takes the outcome of the shadow call in flight, if it has ended, into the
// backoff and the measure (unless the leadership they were of has ended since); it says
// whether a call is still in flight.
func (r *Runner) collectShadow() (busy bool) {
	if r.shadowC.out == nil {
		return false
	}
	var o shadowOutcome
	select {
	case o = <-r.shadowC.out:
	default:
		return true
	}
	r.shadowC.out = nil
	if o.fn == r.fn && r.fn != nil {
		r.settleCall(o.q, o.now, o.err, o.detail)
	}
	if o.track == r.shadowK && r.shadowK != nil {
		if o.err != nil {
			r.shadowFailed(o.now)
		} else {
			r.shadowMeasured(o.q, o.pool, o.made, o.rejected, o.now)
		}
	}
	return false
}

// ShadowCallDone waits until the runner's last shadow call, if any, has ended, or ctx ends.
func (r *Runner) ShadowCallDone(ctx context.Context) error {
	done := r.shadowC.done.Load()
	if done == nil {
		return nil
	}
	select {
	case <-*done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
