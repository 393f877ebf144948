package queuesvc

import (
	"context"
	"fmt"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuefeed"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The Service's event streams (the body of SSE, and of a stream per ticket): read from the
// queue's feed, resumed after a Last-Event-ID or started at the feed's head.

// Events returns up to limit events of a queue after seq, waiting up to wait for the first
// one when there is none yet. It is the body of an SSE stream: it reads from the queue's feed
// (shared by every waiter of this replica), or from the store when the stream is further
// behind than the feed keeps.
func (s *Service) Events(ctx context.Context, queue string, after int64, limit int, wait time.Duration) ([]queue.Event, error) {
	evs, _, err := s.StreamEvents(ctx, queue, "", after, limit, wait)
	return evs, err
}

// StreamEvents is Events for a stream that keeps its place: through is the Seq to ask after
// next, past the events returned and the other keys' events passed over. A stream that
// resumed from its last event instead would fall behind the feed's buffer while the queue
// moves only with other keys' tickets, and read the store at every wait: one key's many
// streams did so at once and took every connection of the pool (docs/performance.md, the
// soak's flood). With a
// ticket, the stream reads that ticket's events only, and sleeps through the others: a
// stream per waiting ticket (a game client's) then costs what its long-poll would.
func (s *Service) StreamEvents(ctx context.Context, queue, ticket string, after int64, limit int, wait time.Duration) (_ []queue.Event, through int64, _ error) {
	if err := ratings.ValidateName(queue); err != nil {
		return nil, after, apperr.Field("name", "%s", err)
	}
	if err := CheckEventTicket(ticket); err != nil {
		return nil, after, err
	}
	scope := eventScopeOf(ctx, ticket)
	if wait <= 0 {
		page, err := s.store.Events(ctx, queue, after, limit, false)
		if evs := page.Events; len(evs) > 0 {
			after = evs[len(evs)-1].Seq
		}
		return scope.Filter(page.Events), after, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	f, err := s.feeds.Acquire(wctx, queue)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return nil, after, nil
		}
		return nil, after, err
	}
	defer s.feeds.Release(f)
	for {
		evs, through, done, err := s.streamStep(ctx, wctx, f, scope, after, limit)
		if done || err != nil {
			return evs, through, err
		}
		after = through
	}
}

// streamStep is one look of a stream at the feed (or the store, when the stream is behind
// the feed's buffer) and, when it finds nothing, one wait for the feed to move: done with
// the events found, or when the wait ran out; else the stream looks again after through. A
// key sees its own tickets' events only (DESIGN, "Ownership"): a batch of other keys' events
// moves the cursor on, and the wait goes on.
func (s *Service) streamStep(ctx, wctx context.Context, f *queuefeed.Feed, scope queuefeed.Scope, after int64, limit int) (_ []queue.Event, through int64, done bool, _ error) {
	evs, through, covered, moved := s.feeds.Since(f, after, limit, scope)
	defer s.feeds.Unwait(f, scope, moved)
	switch {
	case covered && len(evs) > 0:
		return evs, through, true, nil
	case covered:
		after = through
	default:
		page, err := s.store.Events(ctx, f.Queue, after, limit, false)
		if err != nil {
			return nil, after, true, err
		}
		evs := page.Events
		if len(evs) > 0 {
			if kept := scope.Filter(evs); len(kept) > 0 {
				return kept, evs[len(evs)-1].Seq, true, nil
			}
			return nil, evs[len(evs)-1].Seq, false, nil
		}
	}
	select {
	case <-moved:
		return nil, after, false, nil
	case <-wctx.Done():
		if ctx.Err() != nil {
			return nil, after, true, ctx.Err()
		}
		return nil, s.feeds.Settle(f, after, moved), true, nil
	}
}

// CheckEventTicket refuses (400 naming ticket) a stream's ticket filter that is not a ticket
// id; "" is no filter. A transport checks it before its stream's first byte.
func CheckEventTicket(ticket string) error {
	if ticket == "" {
		return nil
	}
	if err := ratings.ValidateID(ticket); err != nil {
		return apperr.Field("ticket", "%s", err)
	}
	return nil
}

// CheckResume says whether a stream can resume after the event after (its Last-Event-ID,
// named field): a Gone error naming the oldest and newest events kept when the events right
// after it were purged (the client was away longer than the retention) or never existed, so
// that the client reads its tickets instead of missing their changes. after 0 is "from the
// oldest kept event", always possible.
func (s *Service) CheckResume(ctx context.Context, queue string, after int64, field string) error {
	if after <= 0 {
		return nil
	}
	next, err := s.store.Events(ctx, queue, after, 1, false)
	head := next.Head
	if err != nil || after == head || (len(next.Events) > 0 && next.Events[0].Seq == after+1) {
		return err
	}
	first, err := s.store.Events(ctx, queue, 0, 1, false)
	if err != nil {
		return err
	}
	oldest := head + 1
	if len(first.Events) > 0 {
		oldest = first.Events[0].Seq
	}
	kept := fmt.Sprintf("events %d to %d are kept", oldest, head)
	if oldest > head {
		kept = fmt.Sprintf("no event is kept; the newest was %d", head)
	}
	return &apperr.Error{Code: apperr.Gone,
		Message: fmt.Sprintf("%s %d is outside the queue's kept events (%s): read your tickets (GET /v1/tickets/{id}), then resume from %d", field, after, kept, head),
		Fields:  []apperr.FieldError{{Field: field, Message: kept}}}
}

// EventHead returns the Seq of the queue's newest event: an event stream that starts "from
// now on" starts after it.
func (s *Service) EventHead(ctx context.Context, queue string) (int64, error) {
	if err := ratings.ValidateName(queue); err != nil {
		return 0, apperr.Field("name", "%s", err)
	}
	page, err := s.store.Events(ctx, queue, 0, 0, false)
	return page.Head, err
}

// StreamStart is where a stream given no resume point starts: after the queue's newest event
// as this replica's feed of the queue last read it, when one runs (no read of the store for
// each stream: a game client opens one per ticket), else as the store says. The feed may be
// a moment behind the store: such a stream's first events may be a moment old.
func (s *Service) StreamStart(ctx context.Context, queue string) (int64, error) {
	if err := ratings.ValidateName(queue); err != nil {
		return 0, apperr.Field("name", "%s", err)
	}
	if head, ok := s.feeds.Head(queue); ok {
		return head, nil
	}
	page, err := s.store.Events(ctx, queue, 0, 0, false)
	return page.Head, err
}
