package queuesvc

import (
	"context"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The Service's side of a partitioned queue (queue/partition.go): the runners a queue needs
// (its units), and which runner here, and which partition, a ticket's is.

// units are the runners q needs: itself, or itself as a whole and each partition (at most
// MaxPartitions). A store that cannot list the partitions or the replicas now leaves the last
// known ones.
func (s *Service) units(ctx context.Context, q queue.Queue) []unit {
	if !q.Partitioned() {
		s.parts.Delete(q.Name) // partition_by removed: its stats are the queue's own again
		return []unit{{key: q.Name}}
	}
	v, _ := s.parts.LoadOrStore(q.Name, &partitionSet{held: map[*runner]bool{}, searching: map[*runner][2]int{}})
	set := v.(*partitionSet)
	set.def.Store(&q)
	values, err := s.store.Partitions(ctx, q)
	if err != nil {
		s.logger.Warn("queue: cannot list the queue's partitions", "queue", q.Name, "err", err)
		values = set.known(q.Name, s)
	}
	values = s.withLeading(q.Name, values)
	if len(values) > queue.MaxPartitions {
		s.logger.Warn("queue: more partitions than a replica runs; the last are not ticked",
			"queue", q.Name, "partitions", len(values), "max", queue.MaxPartitions)
		values = values[:queue.MaxPartitions]
	}
	replicas, err := s.store.Replicas(ctx)
	if err != nil || replicas < 1 {
		replicas = 1 // alone, as far as this replica can tell: it leads what it can
	}
	set.share.Store(int64((max(len(values), 1) + replicas - 1) / replicas))
	out := []unit{{key: q.Name, whole: true, set: set}}
	for _, v := range values {
		out = append(out, unit{key: queue.PartitionKey(q.Name, v), part: v, set: set})
	}
	return out
}

// withLeading adds to values the partitions whose runner here leads. The store lists a
// partition by its searching tickets and its published stats: a runner that matched its
// partition's last tickets before its first publication (a tick commits, then publishes) is in
// neither for a moment, and stopping it then lost what it had counted, the match among it: the
// runner started again once the stats appeared counted from nothing (seen as a partition with
// no match in TestPartitionsOverHTTP, one run in ten).
func (s *Service) withLeading(queueName string, values []string) []string {
	s.runners.Range(func(k, v any) bool {
		name, p := queue.SplitPartitionKey(k.(string))
		if name == queueName && p != "" && v.(*runner).leading.Load() && !slices.Contains(values, p) {
			values = append(values, p)
		}
		return true
	})
	slices.Sort(values)
	return values
}

// known are the partitions this replica runs for queue now.
func (ps *partitionSet) known(queueName string, s *Service) []string {
	var out []string
	s.runners.Range(func(k, _ any) bool {
		if name, v := queue.SplitPartitionKey(k.(string)); name == queueName && v != "" {
			out = append(out, v)
		}
		return true
	})
	return out
}

// runnerOf is the runner here of t's queue, or of its partition in a partitioned queue.
func (s *Service) runnerOf(t *queue.Ticket) (*runner, bool) {
	key := t.Queue
	if v, ok := s.parts.Load(t.Queue); ok {
		if q := v.(*partitionSet).def.Load(); q != nil {
			key = queue.PartitionKey(t.Queue, q.PartitionOf(t.Attributes))
		}
	}
	v, ok := s.runners.Load(key)
	if !ok {
		return nil, false
	}
	return v.(*runner), true
}

// partitionOf is t's partition, as this replica's runners of its queue know the queue ("":
// none, or not partitioned).
func (s *Service) partitionOf(t *queue.Ticket) string {
	if v, ok := s.parts.Load(t.Queue); ok {
		if q := v.(*partitionSet).def.Load(); q != nil {
			return q.PartitionOf(t.Attributes)
		}
	}
	return ""
}

// notePartition wakes Run when a ticket is the first here of a partition this replica runs
// no runner for: its partition ticks without waiting for the next QueueRefresh. (Another
// replica finds it at its own refresh.)
func (s *Service) notePartition(t *queue.Ticket) {
	v, ok := s.parts.Load(t.Queue)
	if !ok {
		return
	}
	q := v.(*partitionSet).def.Load()
	if q == nil {
		return
	}
	if _, ok := s.runners.Load(queue.PartitionKey(t.Queue, q.PartitionOf(t.Attributes))); !ok {
		s.changedQueues()
	}
}
