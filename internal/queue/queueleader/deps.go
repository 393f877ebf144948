// Package queueleader is the leader's loop of a queue or of one partition of it: a runner
// leads (its lease), ticks on the injected clock (loads the queue's changes, runs the pass or
// calls the queue's match function, proposes or commits what it decided), expires the
// proposals past their deadline, starts the placements and delivers the webhook outbox, and
// keeps the stats the replica answers with while it leads. Its Registry is the replica's
// runners. The service (package queuesvc) starts it and reads it; what the loop uses of the
// replica comes in its Deps, so that this package imports no service.
package queueleader

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/trace"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuestats"
)

// Deps is what a runner uses of its replica: the store, logger, clock, matcher and tracer
// the service was given, the config values the runner reads, the recorders it calls, and the
// service's work it hands on (the proposals it resolved, the webhook outbox, the placements,
// the match function's calls). The service makes one that all its runners share.
type Deps struct {
	Store   queue.Store
	Logger  *slog.Logger
	Clock   clockwork.Clock
	Matcher queue.Matcher
	Tracer  trace.Tracer
	Metrics Metrics
	// ProposalResolved counts a proposal the runner resolved (its deadline passed).
	ProposalResolved func(p queue.Proposal)
	// DeliverWebhooks posts q's webhook outbox from its cursor, head counting the failed
	// attempts at the first event; ErrNotLeading when the replica no longer leads q.
	DeliverWebhooks func(ctx context.Context, q queue.Queue, head *FailingEvent) error
	// Allocate places a match on the queue's allocator while leading says the replica leads.
	Allocate func(ctx context.Context, a queue.Allocator, p queue.Proposal, leading func() bool)
	// SendPool calls a queue's match function: its proposals, or why the call failed in
	// words.
	SendPool func(ctx context.Context, mf queue.MatchFunction, req queue.FunctionRequest) ([]queue.ProposedMatch, string, error)
	// Instance names this replica in a partition's stats; WebhookBackoff is the pause after a
	// failed delivery, doubled after each failure of the same event up to 60 times it.
	Instance       string
	WebhookBackoff time.Duration
}

// Metrics are the recorders a runner calls (the service's; nil-safe).
type Metrics interface {
	Ticked(queue string, elapsed time.Duration, searching, players int)
	Matched(queueName string, match queue.Match, waits []time.Duration)
	Proposed(queue string)
	ExpiredTicket(queue, reason string)
	Waited(queueName string, samples []queuestats.WaitSample)
	Waits(queue string, wait time.Duration)
	Bands(queue string, st *queue.Stats)
	RuleBlocks(queue string, waiting *queue.Waits)
	Claims(queue string, done queue.TickCommitted)
	Leading(queue string, yes bool)
	Forget(queue string)
	LeadingPartition(queue, partition string, yes bool)
	TakeoverRefused(queue string)
	FunctionCalled(outcome string, took time.Duration)
	FunctionRejected(queue string, rejected []queue.Rejection)
}

// The outcomes of a match function's call that the runner decides: no call made.
const (
	CallBackoff = "backoff" // not made: the function failed just before
	CallSkipped = "skipped" // not made: the shadow's last call is still running
)

// ErrNotLeading is DeliverWebhooks's when this replica no longer leads the queue: not a
// failure of the receiver's, so the deliverer waits for the outbox rather than backing off.
var ErrNotLeading = errors.New("this replica no longer leads the queue")

// FailingEvent counts the failed attempts at the event at the head of the outbox: the
// deliverer keeps it from one delivery to the next, DeliverWebhooks counts in it.
type FailingEvent struct {
	Seq      int64
	Attempts int
}
