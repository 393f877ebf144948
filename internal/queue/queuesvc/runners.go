package queuesvc

import (
	"context"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue/queueleader"
)

// The Service's side of the tick loop: Run has its registry (queueleader/registry.go) start a
// runner (queueleader/loop.go) for each queue and partition this replica may lead, give them
// their definitions and stop them; it purges what is past the retention.

// Run ticks the queues this replica leads until ctx ends. Every replica runs it: for each
// queue a runner tries to lead at every tick, and only the leader loads the queue's changes,
// runs the pass and writes its matches. Run re-reads the queue definitions every
// Config.QueueRefresh (so a queue made or changed on another replica starts ticking here;
// one made here starts at once),
// purges what is past Config.Retention every minute, and, when ctx ends, stops its runners
// and resigns their queues.
func (s *Service) Run(ctx context.Context) error {
	defer s.leaders.Stop()
	refresh := s.clock.NewTicker(s.cfg.QueueRefresh)
	defer refresh.Stop()
	purge := s.clock.NewTicker(time.Minute)
	defer purge.Stop()
	for {
		s.leaders.Sync(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-refresh.Chan():
		case <-s.queuesChanged:
		case <-purge.Chan():
			s.purge(ctx)
		}
	}
}

func (s *Service) purge(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	r, err := s.store.Purge(pctx, s.now().Add(-s.cfg.Retention))
	switch {
	case err != nil && ctx.Err() == nil:
		s.logger.Warn("queue: purge failed", "err", err, "tickets", r.Tickets, "matches", r.Matches, "events", r.Events)
	case r.Tickets+r.Matches+r.Events > 0:
		s.logger.Info("queue: purged", "tickets", r.Tickets, "matches", r.Matches, "events", r.Events)
	}
}

// leaderDeps are s's for its runners: what they use of the replica, and the work they hand
// on to it.
func (s *Service) leaderDeps() queueleader.Deps {
	return queueleader.Deps{Store: s.store, Logger: s.logger, Clock: s.clock, Matcher: s.matcher, Tracer: s.tracer,
		Metrics: s.metrics, ProposalResolved: s.proposalResolved, DeliverWebhooks: s.deliverWebhooks,
		Allocate: s.allocate, SendPool: s.sendPool, Instance: s.cfg.Instance, WebhookBackoff: s.cfg.WebhookBackoff}
}
