package queueleader

import (
	"context"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The allocator's leader side (the service's posts are queuesvc/allocator_service.go's, handed
// in as Deps.Allocate): at each tick the runner starts placing the matches it is not placing
// already.

// placeMatches starts placing, on the allocator, the queue's placing matches that this
// replica is not placing already. The leader calls it at each tick.
func (r *Runner) placeMatches(ctx context.Context, q queue.Queue) {
	if q.Allocator == nil {
		return
	}
	ps, err := r.deps.Store.PlacingProposals(ctx, q.Name)
	if err != nil {
		r.deps.Logger.Warn("queue: cannot read the matches being placed", "queue", q.Name, "err", err)
		return
	}
	for _, p := range ps {
		if _, busy := r.allocating.LoadOrStore(p.Match.ID, true); busy {
			continue
		}
		r.done.Go(func() {
			defer r.allocating.Delete(p.Match.ID)
			r.deps.Allocate(r.ctx, *q.Allocator, p, r.leading.Load)
		})
	}
}
