// Package storeguard bounds a queue.Store's calls: each call has a deadline (then
// apperr.Unavailable, a 503 with Retry-After) and is observed for the store-call metrics.
package storeguard

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// New wraps store so that every call has a deadline and is observed. A call that has not
// finished after timeout ends with apperr.Unavailable (an HTTP 503 with Retry-After), so a
// database that stops answering never hangs a request; observe (nil: none) is told of every
// call with its operation, error and time, as ratings.Metered does for the rating store.
// WaitEvents is a wait the caller bounds itself, Purge is bounded by the purge loop (it may
// delete a large backlog), and Lead and Resign keep their own bounds (leadership lives on a
// connection of its own), so those four pass through unbounded.
func New(store queue.Store, timeout time.Duration, observe func(op string, err error, elapsed time.Duration)) queue.Store {
	return NewWithSpans(store, timeout, observe, nil)
}

// StoreSpan starts the trace span of one store call, op, under ctx's (internal/tracing's
// StoreSpans); the function it returns ends it with the call's error.
type StoreSpan func(ctx context.Context, op string) (context.Context, func(error))

// NewWithSpans is New that also starts span (nil: none) for every call it observes.
func NewWithSpans(store queue.Store, timeout time.Duration, observe func(op string, err error, elapsed time.Duration), span StoreSpan) queue.Store {
	if observe == nil {
		observe = func(string, error, time.Duration) {}
	}
	if span == nil {
		span = func(ctx context.Context, _ string) (context.Context, func(error)) { return ctx, func(error) {} }
	}
	return &guarded{Store: store, timeout: timeout, observe: observe, span: span}
}

type guarded struct {
	queue.Store
	timeout time.Duration
	observe func(string, error, time.Duration)
	span    StoreSpan
}

// call bounds ctx for op; the returned function, deferred with the address of the named
// error result, turns a deadline into Unavailable and reports the call.
func (g *guarded) call(ctx context.Context, op string) (context.Context, func(*error)) {
	start := time.Now()
	ctx, end := g.span(ctx, op)
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	return ctx, func(err *error) {
		if *err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && apperr.CodeOf(*err) != apperr.Unavailable {
			*err = apperr.Wrap(apperr.Unavailable, *err, "queue store: "+op+": the database did not answer within "+g.timeout.String())
		}
		cancel()
		g.observe(op, *err, time.Since(start))
		end(*err)
	}
}

func (g *guarded) PutQueue(ctx context.Context, q queue.Queue) (_ queue.Queue, _ bool, err error) {
	ctx, done := g.call(ctx, "put_queue")
	defer done(&err)
	return g.Store.PutQueue(ctx, q)
}

func (g *guarded) GetQueue(ctx context.Context, name string) (_ queue.Queue, err error) {
	ctx, done := g.call(ctx, "get_queue")
	defer done(&err)
	return g.Store.GetQueue(ctx, name)
}

func (g *guarded) ListQueues(ctx context.Context) (_ []queue.Queue, err error) {
	ctx, done := g.call(ctx, "list_queues")
	defer done(&err)
	return g.Store.ListQueues(ctx)
}

func (g *guarded) Apply(ctx context.Context, at time.Time, cause queue.Cause) (_ queue.Applied, err error) {
	ctx, done := g.call(ctx, cause.Op())
	defer done(&err)
	return g.Store.Apply(ctx, at, cause)
}

func (g *guarded) CreateTicket(ctx context.Context, t queue.Ticket) (_ queue.Ticket, _ bool, err error) {
	ctx, done := g.call(ctx, "create_ticket")
	defer done(&err)
	return g.Store.CreateTicket(ctx, t)
}

func (g *guarded) GetTicket(ctx context.Context, id string) (_ queue.Ticket, err error) {
	ctx, done := g.call(ctx, "get_ticket")
	defer done(&err)
	return g.Store.GetTicket(ctx, id)
}

func (g *guarded) Changes(ctx context.Context, q queue.Queue, part string, since queue.Cursor) (_ []queue.Ticket, _ queue.Cursor, err error) {
	ctx, done := g.call(ctx, "changes")
	defer done(&err)
	return g.Store.Changes(ctx, q, part, since)
}

func (g *guarded) GetMatch(ctx context.Context, id string) (_ queue.Match, err error) {
	ctx, done := g.call(ctx, "get_match")
	defer done(&err)
	return g.Store.GetMatch(ctx, id)
}

func (g *guarded) MatchConnection(ctx context.Context, id string) (_ json.RawMessage, err error) {
	ctx, done := g.call(ctx, "match_connection")
	defer done(&err)
	return g.Store.MatchConnection(ctx, id)
}

func (g *guarded) EndClaims(ctx context.Context, match string, at time.Time, durable bool) (_ bool, err error) {
	ctx, done := g.call(ctx, "end_claims")
	defer done(&err)
	return g.Store.EndClaims(ctx, match, at, durable)
}

func (g *guarded) Events(ctx context.Context, qname string, after int64, limit int, tickets bool) (_ queue.EventPage, err error) {
	// A read of the head alone and a feed's read with the tickets cost otherwise than a page
	// of events: each has its op.
	op := "events"
	switch {
	case tickets:
		op = "feed_events"
	case limit <= 0:
		op = "event_head"
	}
	ctx, done := g.call(ctx, op)
	defer done(&err)
	return g.Store.Events(ctx, qname, after, limit, tickets)
}

func (g *guarded) WebhookCursor(ctx context.Context, qname string) (_ int64, err error) {
	ctx, done := g.call(ctx, "webhook_cursor")
	defer done(&err)
	return g.Store.WebhookCursor(ctx, qname)
}

func (g *guarded) SetWebhookCursor(ctx context.Context, qname string, seq int64) (err error) {
	ctx, done := g.call(ctx, "set_webhook_cursor")
	defer done(&err)
	return g.Store.SetWebhookCursor(ctx, qname, seq)
}

func (g *guarded) Ping(ctx context.Context) (err error) {
	ctx, done := g.call(ctx, "ping")
	defer done(&err)
	return g.Store.Ping(ctx)
}

func (g *guarded) PublishStats(ctx context.Context, qname string, st queue.Stats) (err error) {
	ctx, done := g.call(ctx, "publish_stats")
	defer done(&err)
	return g.Store.PublishStats(ctx, qname, st)
}

func (g *guarded) PublishedStats(ctx context.Context, qname string) (_ []queue.Stats, err error) {
	ctx, done := g.call(ctx, "latest_stats")
	defer done(&err)
	return g.Store.PublishedStats(ctx, qname)
}

func (g *guarded) GetProposal(ctx context.Context, id string) (_ queue.Proposal, err error) {
	ctx, done := g.call(ctx, "get_proposal")
	defer done(&err)
	return g.Store.GetProposal(ctx, id)
}

func (g *guarded) PlacingProposals(ctx context.Context, qname string) (_ []queue.Proposal, err error) {
	ctx, done := g.call(ctx, "placing_proposals")
	defer done(&err)
	return g.Store.PlacingProposals(ctx, qname)
}

func (g *guarded) Partitions(ctx context.Context, q queue.Queue) (_ []string, _ int, err error) {
	ctx, done := g.call(ctx, "partitions")
	defer done(&err)
	return g.Store.Partitions(ctx, q)
}

func (g *guarded) Standings(ctx context.Context, contextKey string, players []string) (_ []queue.Standing, err error) {
	ctx, done := g.call(ctx, "standings")
	defer done(&err)
	return g.Store.Standings(ctx, contextKey, players)
}

func (g *guarded) UpdateStanding(ctx context.Context, contextKey, player string, change func(*queue.Standing) bool) (err error) {
	ctx, done := g.call(ctx, "update_standing")
	defer done(&err)
	return g.Store.UpdateStanding(ctx, contextKey, player, change)
}
