package queuesvc_test

import (
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// BenchmarkPartitionedTick is BenchmarkQueueTick's queue partitioned by its mode: four
// runners, each ticking its thousand tickets, on one replica (which leads them all, as the
// memory store's one process does); a tick ends when all four have ticked.
func BenchmarkPartitionedTick(b *testing.B) {
	var marks []string
	for _, m := range []string{"m0", "m1", "m2", "m3"} {
		marks = append(marks, queue.PartitionKey("modes", m))
	}
	benchmarkQueueTick(b, func(q *queue.Queue) { q.PartitionBy = "mode" }, marks)
}
