package queuesvc

import (
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The Service's side of a partitioned queue (queue/partition.go): which partition a ticket's
// is (the runners a queue needs, its units, are the leader's: queueleader/registry.go).

// partitionOf is t's partition, as this replica's runners of its queue know the queue ("":
// none, or not partitioned).
func (s *Service) partitionOf(t *queue.Ticket) string {
	part, _ := s.leaders.PartitionOf(t)
	return part
}

// notePartition wakes Run when a ticket is the first here of a partition this replica runs
// no runner for: its partition ticks without waiting for the next QueueRefresh. (Another
// replica finds it at its own refresh.)
func (s *Service) notePartition(t *queue.Ticket) {
	part, ok := s.leaders.PartitionOf(t)
	if !ok {
		return
	}
	if _, ok := s.leaders.Runner(queue.PartitionKey(t.Queue, part)); !ok {
		s.changedQueues()
	}
}
