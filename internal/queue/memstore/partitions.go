package memstore

import (
	"context"
	"maps"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Partitions implements queue.PartitionStore: the values of the live tickets (searching,
// proposed or placing) and of the partitions that published stats.
func (s *Store) Partitions(ctx context.Context, def queue.Queue) ([]string, error) {
	values := map[string]bool{}
	err := s.onQueue(def.Name, false, func(q *memQueue) {
		for _, id := range q.searching {
			if t, ok := s.tickets[id]; ok {
				values[def.PartitionOf(t.t.Attributes)] = true
			}
		}
		for v := range q.partStats {
			values[v] = true
		}
	})
	delete(values, "")
	return slices.Sorted(maps.Keys(values)), err
}

// Replicas implements queue.PartitionStore: the one process leads every partition.
func (s *Store) Replicas(ctx context.Context) (int, error) { return 1, ctx.Err() }

// PartitionStats implements queue.PartitionStore.
func (s *Store) PartitionStats(ctx context.Context, qname string) ([]queue.Stats, error) {
	var out []queue.Stats
	var err error
	if s.onQueue(qname, false, func(q *memQueue) {
		for _, v := range slices.Sorted(maps.Keys(q.partStats)) {
			st, derr := queue.DecodeStats(q.partStats[v])
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
