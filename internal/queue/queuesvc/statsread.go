package queuesvc

import (
	"context"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// statsOf is a queue's stats as this replica knows them: its own view when it leads the
// queue, else the leader's snapshot from the store, read at most once per StatsRefresh.
func (s *Service) statsOf(ctx context.Context, name string) (queue.Stats, error) {
	if s.leaders.Partitioned(name) {
		return s.partitionedStats(ctx, name)
	}
	if r, ok := s.leaders.Runner(name); ok {
		if r.Leading() {
			if st := r.Stats(); st != nil {
				return *st, nil
			}
		}
	}
	now := s.now()
	if st, ok := s.cachedStats(name, now); ok {
		return st, nil
	}
	// One read for all the callers that find the snapshot stale: every creation in flight on
	// a replica that does not lead the queue used to read and decode it when its second ran
	// out (5.5% of such a replica's CPU in the soak on 2 replicas; docs/performance.md, "The
	// throughput table"). The read is not cancelled with its first caller's request.
	read := s.statsFlight.DoChan(name, func() (any, error) {
		published, err := s.store.PublishedStats(context.WithoutCancel(ctx), name)
		if err != nil {
			return queue.Stats{}, err
		}
		st := queue.Stats{Queue: name, At: now.UTC(), Source: "none"}
		if len(published) > 0 && published[0].Partition == "" {
			st, st.Source = published[0], "store"
		}
		s.cacheStats(name, now, st)
		return st, nil
	})
	select {
	case r := <-read:
		if r.Err != nil {
			return queue.Stats{}, r.Err
		}
		return r.Val.(queue.Stats), nil
	case <-ctx.Done():
		return queue.Stats{}, apperr.Wrap(apperr.Unavailable, ctx.Err(), "queue: reading the queue's stats")
	}
}
