package memstore

import (
	"context"
	"maps"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Partitions implements queue.PartitionStore (queue.Queue.Partitions): the one process leads
// every partition.
func (s *Store) Partitions(ctx context.Context, def queue.Queue) (out []string, replicas int, err error) {
	err = s.onQueue(def.Name, false, func(q *memQueue) {
		var live []*queue.Ticket
		for _, id := range q.searching {
			if mt, ok := s.tickets[id]; ok {
				live = append(live, &mt.t)
			}
		}
		out = def.Partitions(live, slices.Collect(maps.Keys(q.stats)))
	})
	return out, 1, err
}
