package queuesvc

import (
	"context"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The Service's side of the tick loop: Run starts a runner (loop.go) for each queue and
// partition this replica may lead, gives them their definitions and stops them; it purges what
// is past the retention; a queue's tick marks say when its last tick here ended.

// Run ticks the queues this replica leads until ctx ends. Every replica runs it: for each
// queue a runner tries to lead at every tick, and only the leader loads the queue's changes,
// runs the pass and writes its matches. Run re-reads the queue definitions every
// Config.QueueRefresh (so a queue made or changed on another replica starts ticking here;
// one made here starts at once),
// purges what is past Config.Retention every minute, and, when ctx ends, stops its runners
// and resigns their queues.
func (s *Service) Run(ctx context.Context) error {
	runners := map[string]*runner{}
	defer func() {
		for name, r := range runners {
			r.stop()
			s.runners.Delete(name)
		}
	}()
	refresh := s.clock.NewTicker(s.cfg.QueueRefresh)
	defer refresh.Stop()
	purge := s.clock.NewTicker(time.Minute)
	defer purge.Stop()
	for {
		s.syncRunners(ctx, runners)
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

// syncRunners starts a runner for each new queue, gives the others their current definition,
// and stops those whose queue is gone.
func (s *Service) syncRunners(ctx context.Context, runners map[string]*runner) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	qs, err := s.store.ListQueues(rctx)
	if err != nil {
		if ctx.Err() == nil {
			s.logger.Warn("queue: cannot read the queue definitions", "err", err)
		}
		return
	}
	live := make(map[string]bool, len(qs))
	for _, q := range qs {
		for _, u := range s.units(rctx, q) {
			live[u.key] = true
			if r, ok := runners[u.key]; ok && r.whole == u.whole {
				r.def.Store(&q)
				continue
			} else if ok { // partition_by set or removed: the queue's runner is another kind
				r.stop()
			}
			runners[u.key] = s.startRunner(ctx, q, u)
		}
	}
	for key, r := range runners {
		if !live[key] {
			r.stop()
			delete(runners, key)
			s.runners.Delete(key)
			if name, value := queue.SplitPartitionKey(key); value == "" {
				s.metrics.forget(name)
				s.parts.Delete(name)
			} else {
				s.metrics.leadingPartition(name, value, false)
			}
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

// tickMarks are queue's, made at the first ask, before or after its runner starts.
func (s *Service) tickMarks(queue string) *tickMarks {
	m, _ := s.ticked.LoadOrStore(queue, &tickMarks{})
	return m.(*tickMarks)
}

// tickMarks say when a queue's last tick here began, and wake whoever waits for a tick to end
// (for tests that advance their clock and wait for the tick it brings).
type tickMarks struct {
	mu    sync.Mutex
	at    time.Time
	ended chan struct{} // closed, and replaced, as each tick ends
}

func (m *tickMarks) done(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.at = at
	if m.ended != nil {
		close(m.ended)
	}
	m.ended = make(chan struct{})
}

// since says whether a tick that began at at or later has ended, and if not, the channel
// closed when the next one ends.
func (m *tickMarks) since(at time.Time) (bool, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended == nil {
		m.ended = make(chan struct{})
	}
	return !m.at.IsZero() && !m.at.Before(at), m.ended
}

func (s *Service) startRunner(parent context.Context, q queue.Queue, u unit) *runner {
	ctx, cancel := context.WithCancel(parent)
	r := &runner{deps: s.leader, unit: u, cancel: cancel, kick: make(chan struct{}, 1), delivered: make(chan struct{}), ctx: ctx}
	r.def.Store(&q)
	// Found by Stats before its first tick: a tick that ended before the runner was stored
	// would leave a caller told of that tick (Ticked, a long-poll) reading stats from nowhere.
	s.runners.Store(u.key, r)
	r.done.Go(func() { r.loop(ctx) })
	if u.part != "" { // the queue's runner delivers its webhooks
		close(r.delivered)
	} else {
		r.done.Go(func() { defer close(r.delivered); r.deliverLoop(ctx) })
	}
	return r
}

// newLeaderDeps are s's for its runners.
func (s *Service) newLeaderDeps() *leaderDeps {
	return &leaderDeps{store: s.store, logger: s.logger, clock: s.clock, matcher: s.matcher, tracer: s.tracer,
		metrics: s.metrics, work: s, sendPool: s.sendPool, instance: s.cfg.Instance,
		webhookBackoff: s.cfg.WebhookBackoff, runners: &s.runners,
		tickEnded: func(key string, at time.Time) { s.tickMarks(key).done(at) }}
}
