package queueleader

import (
	"context"
	"errors"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The webhook's leader side (the service's delivery of the outbox is
// queuesvc/webhook_service.go's, handed in as Deps.DeliverWebhooks): the runner's deliverer,
// woken by its ticks, retrying with backoff.

// deliverLoop posts the queue's events to its webhook while this replica leads the queue: the
// events after the webhook cursor, in order. A failed delivery is retried with backoff
// (WebhookBackoff doubling to 60 times it); the queue's ticks wake the loop, but none of
// them brings the retry forward or pushes it back. The cursor is kept in the store, so the
// outbox survives restarts and leader changes; delivery is at least once (a receiver dedupes
// by X-Matchmaker-Delivery). An event the receiver refuses for good (a 4xx other than 408,
// 425 and 429), or that failed WebhookMaxAttempts times, or is older than WebhookMaxAge when
// it fails, is dead-lettered: logged, counted, and passed over, so one bad event does not
// hold back every later one, nor keep the purge from the queue's events.
func (r *Runner) deliverLoop(ctx context.Context) {
	clock := r.deps.Clock
	var retryAt time.Time // zero: no failure pending
	var head FailingEvent
	for {
		wait := time.Second
		if !retryAt.IsZero() {
			wait = max(clock.Until(retryAt), 0)
		}
		timer := clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-r.kick:
			timer.Stop()
			if !retryAt.IsZero() && clock.Now().Before(retryAt) {
				continue // a failing receiver is not hammered at every tick
			}
		case <-timer.Chan():
		}
		q := r.def.Load()
		if !r.leading.Load() || q.Webhook == nil {
			retryAt, head = time.Time{}, FailingEvent{}
			continue
		}
		err := r.deps.DeliverWebhooks(ctx, *q, &head)
		if errors.Is(err, queue.ErrOutboxHandover) || errors.Is(err, ErrNotLeading) {
			// Not a failure of the receiver's: the outbox is (still) another leader's.
			retryAt = clock.Now().Add(min(r.deps.WebhookBackoff, time.Second))
			r.deps.Logger.Debug("queue: webhook delivery waits for the queue's outbox", "queue", q.Name, "err", err)
			continue
		}
		if err != nil {
			backoff := min(r.deps.WebhookBackoff<<min(max(head.Attempts-1, 0), 16), 60*r.deps.WebhookBackoff)
			retryAt = clock.Now().Add(backoff)
			if ctx.Err() == nil {
				r.deps.Logger.Warn("queue: webhook delivery failed; retrying", "queue", q.Name, "err", err, "attempt", head.Attempts, "retry_in", backoff.String())
			}
			continue
		}
		retryAt = time.Time{}
	}
}
