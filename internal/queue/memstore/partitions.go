package memstore

import (
	"context"
	"maps"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Partitions implements queue.PartitionStore (queue.Queue.Partitions).
func (s *Store) Partitions(ctx context.Context, def queue.Queue) (out []string, err error) {
	err = s.onQueue(def.Name, false, func(q *memQueue) {
		var live []*queue.Ticket
		for _, id := range q.searching {
			if mt, ok := s.tickets[id]; ok {
				live = append(live, &mt.t)
			}
		}
		out = def.Partitions(live, slices.Collect(maps.Keys(q.stats)))
	})
	return out, err
}

// Replicas implements queue.PartitionStore: the one process leads every partition.
func (s *Store) Replicas(ctx context.Context) (int, error) { return 1, ctx.Err() }

// PartitionStats implements queue.PartitionStore.
func (s *Store) PartitionStats(ctx context.Context, qname string) ([]queue.Stats, error) {
	var out []queue.Stats
	var err error
	if s.onQueue(qname, false, func(q *memQueue) {
		for _, v := range slices.Sorted(maps.Keys(q.stats)) {
			if v == "" {
				continue // the queue's own
			}
			st, derr := queue.DecodeStats(q.stats[v])
			if derr != nil {
				err = derr
				return
			}
			out = append(out, st)
		}
	}) != nil {
		return nil, nil // a queue gone: no partitions
	}
	return out, err
}
