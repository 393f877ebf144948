package queuesvc

import (
	"context"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/trace"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuestats"
)

// leaderDeps is what a runner uses of its replica, named so that the runner never reaches
// into the Service: the store, logger, clock, matcher and tracer the Service was given, the
// config values the runner reads, the recorders it calls and the Service's work it hands on
// (leaderWork). The Service makes one that all its runners share (newLeaderDeps, runners.go).
type leaderDeps struct {
	store   queue.Store
	logger  *slog.Logger
	clock   clockwork.Clock
	matcher queue.Matcher
	tracer  trace.Tracer
	metrics leaderMetrics
	work    leaderWork
	// sendPool calls a queue's match function (the Service's Outbound; matchfunction_service.go).
	sendPool func(ctx context.Context, mf queue.MatchFunction, req queue.FunctionRequest) ([]queue.ProposedMatch, string, error)
	// instance names this replica in a partition's stats (Config.Instance); webhookBackoff is
	// Config.WebhookBackoff.
	instance       string
	webhookBackoff time.Duration
}

// leaderMetrics are the recorders a runner calls (*Metrics; nil-safe).
type leaderMetrics interface {
	ticked(queue string, elapsed time.Duration, searching, players int)
	matched(queueName string, match queue.Match, waits []time.Duration)
	proposed(queue string)
	expiredTicket(queue, reason string)
	waited(queueName string, samples []queuestats.WaitSample)
	waits(queue string, wait time.Duration)
	bands(queue string, st *queue.Stats)
	ruleBlocks(queue string, waiting *queue.Waits)
	claims(queue string, done queue.TickCommitted)
	leading(queue string, yes bool)
	forget(queue string)
	leadingPartition(queue, partition string, yes bool)
	takeoverRefused(queue string)
	functionCalled(outcome string, took time.Duration)
	functionRejected(queue string, rejected []queue.Rejection)
}

// leaderWork is the Service's work a runner hands on: counting a resolved proposal, posting the
// queue's webhook outbox, and placing a match on the allocator (*Service).
type leaderWork interface {
	proposalResolved(p queue.Proposal)
	deliverWebhooks(ctx context.Context, q queue.Queue, head *failingEvent) error
	allocate(ctx context.Context, a queue.Allocator, p queue.Proposal, leading func() bool)
}
