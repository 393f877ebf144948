package queuesvc

import (
	"context"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The allocator's leader side (the Service's posts are allocator_service.go's): at each tick the
// runner starts placing the matches it is not placing already.

// placeMatches starts placing, on the allocator, the queue's placing matches that this
// replica is not placing already. The leader calls it at each tick.
func (r *runner) placeMatches(ctx context.Context, q queue.Queue) {
	if q.Allocator == nil {
		return
	}
	ps, err := r.deps.store.PlacingProposals(ctx, q.Name)
	if err != nil {
		r.deps.logger.Warn("queue: cannot read the matches being placed", "queue", q.Name, "err", err)
		return
	}
	for _, p := range ps {
		if _, busy := r.allocating.LoadOrStore(p.Match.ID, true); busy {
			continue
		}
		r.done.Go(func() {
			defer r.allocating.Delete(p.Match.ID)
			r.deps.work.allocate(r.ctx, *q.Allocator, p, r.leading.Load)
		})
	}
}
