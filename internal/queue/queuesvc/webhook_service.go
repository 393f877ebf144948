package queuesvc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queueleader"
)

// The webhook's delivery by the queue's leader (the event's body, its signature and the
// Outbound interface are queue/webhook.go's; the runner's deliverer that calls it is
// queueleader/webhook.go's): the outbox posted in order within the lease, the cursor kept.

// deliverWebhooks posts every event after the queue's webhook cursor, in order; it stops at
// the first failure to retry. The cursor moves past the acknowledged and dead-lettered events
// once per batch read (and at least every cursorFlush, and before returning), not once per
// event: each write is an UPDATE of the queue's row, which the ticks lock.
func (s *Service) deliverWebhooks(ctx context.Context, q queue.Queue, head *queueleader.FailingEvent) (err error) {
	cursor, err := s.store.WebhookCursor(ctx, q.Name)
	if err != nil {
		return err
	}
	written, flushed := cursor, s.clock.Now()
	// flush records the cursor, even as the runner stops: an acknowledged event not recorded
	// is posted again by the next leader. A deposed leader's flush, after its lease ended,
	// still lands before the next leader may claim the outbox (a quarter of the lease later).
	flush := func() error {
		if cursor == written {
			return nil
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.WebhookTimeout)
		defer cancel()
		if err := s.store.SetWebhookCursor(wctx, q.Name, cursor); err != nil {
			return err
		}
		written, flushed = cursor, s.clock.Now()
		return nil
	}
	defer func() {
		if ferr := flush(); err == nil {
			err = ferr
		}
	}()
	for {
		page, err := s.store.Events(ctx, q.Name, cursor, 100, false)
		if err != nil || len(page.Events) == 0 {
			return err
		}
		for _, e := range page.Events {
			// A replica deposed since its last tick (its lock's session ended, another leads;
			// or it hung, and another broke its lease) must not post what the new leader posts
			// too: it posts only within its lease, and the new leader posts only once that
			// lease has run out.
			left, err := s.leaseLeft(ctx, q.Name)
			if err != nil {
				return err
			}
			pctx, span := s.webhookSpan(ctx, e)
			err = s.post(pctx, q.Webhook, e, min(s.cfg.WebhookTimeout, left))
			endSpan(span, err)
			if err != nil && ctx.Err() == nil {
				if _, lost := s.leaseLeft(ctx, q.Name); lost != nil {
					return lost // cut short by the lease's end: the next leader's to post
				}
			}
			s.metrics.webhook(webhookOutcome(err))
			if err != nil {
				if head.Seq != e.Seq {
					*head = queueleader.FailingEvent{Seq: e.Seq}
				}
				head.Attempts++
				why := s.deadLetter(err, e, head.Attempts)
				if why == "" {
					return fmt.Errorf("event %d: %w", e.Seq, err)
				}
				s.metrics.webhook("dead_letter")
				s.logger.Error("queue: webhook event dead-lettered: the receiver never took it",
					"queue", q.Name, "seq", e.Seq, "type", e.Type, "ticket_id", e.TicketID, "attempts", head.Attempts, "why", why, "err", err)
			}
			cursor = e.Seq
			if s.clock.Since(flushed) >= cursorFlush {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
	}
}

// cursorFlush is the longest a delivered event goes unrecorded while its batch is posted: a
// leader that dies mid-batch has its successor post again at most this much of it.
const cursorFlush = time.Second

// leaseLeft is how long this replica may still post the queue's events: the rest of its
// lease on a LeaseStore; on another store, the webhook timeout while Lead says it leads.
func (s *Service) leaseLeft(ctx context.Context, queueName string) (time.Duration, error) {
	if ls, ok := s.store.(queue.LeaseStore); ok {
		if left := ls.LeaseLeft(queueName); left > 0 {
			return left, nil
		}
		return 0, queueleader.ErrNotLeading
	}
	if lead, err := s.store.Lead(ctx, queueName); err != nil || !lead {
		return 0, cmp.Or(err, queueleader.ErrNotLeading)
	}
	return s.cfg.WebhookTimeout, nil
}

// deadLetter says why a failed event is given up on, or "" to retry it.
func (s *Service) deadLetter(err error, e queue.Event, attempts int) string {
	var refused *queue.RefusedError
	switch {
	case errors.As(err, &refused) && refused.Permanent():
		return "refused"
	case attempts >= s.cfg.WebhookMaxAttempts:
		return "attempts"
	case s.now().Sub(e.At) >= s.cfg.WebhookMaxAge:
		return "age"
	}
	return ""
}

func webhookOutcome(err error) string {
	if err != nil {
		return "failed"
	}
	return "delivered"
}

// errNoOutbound is the failure of a post by a service given no Outbound.
var errNoOutbound = errors.New("the queue service was given no way to post (Deps.Outbound)")

// post delivers e to w within timeout.
func (s *Service) post(ctx context.Context, w *queue.Webhook, e queue.Event, timeout time.Duration) error {
	if s.outbound == nil {
		return errNoOutbound
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.outbound.PostEvent(ctx, *w, e, s.now())
}
