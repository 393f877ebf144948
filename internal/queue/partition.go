package queue

import (
	"slices"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Partitions (DESIGN, "Partitions and a database that fails over"): a queue whose tickets
// never meet across the values of an attribute (an equal rule that always binds reads it)
// may name it as its partition_by. Each value is then a partition with its own leader, lease
// and tick: a runner per partition (queueleader/loop.go) loads the queue's changes, keeps its partition's
// tickets and ticks them alone, so the queue's CPU is shared out between the replicas, and no
// match crosses partitions. A queue without partition_by is one partition, "", led under the
// queue's name as before.

// MaxPartitions bounds the partitions of one queue a replica runs: each is a runner, and a
// lease where it leads. The values past it (in the store's order) are not ticked, and the
// replica logs it: partition_by is meant for a few values (modes, regions), not for ids.
const MaxPartitions = 64

// partitionSep joins a queue's name and a partition's value in the partition's leadership
// key: no name or value may hold it (names are ValidateName's; an attribute value with it is
// refused at creation).
const partitionSep = "\x1f"

// PartitionKey is the name a partition is led under: the queue's name for the one partition
// of a queue without partition_by, else the name and the value.
func PartitionKey(queueName, value string) string {
	if value == "" {
		return queueName
	}
	return queueName + partitionSep + value
}

// SplitPartitionKey is PartitionKey's inverse: the queue's name and the partition's value
// ("" for a queue's one partition).
func SplitPartitionKey(key string) (queueName, value string) {
	queueName, value, _ = strings.Cut(key, partitionSep)
	return queueName, value
}

// Partitioned says whether the queue is split into partitions.
func (q *Queue) Partitioned() bool { return q.PartitionBy != "" }

// PartitionOf is the partition a ticket of the queue belongs to: its value of the queue's
// partition_by attribute (the attribute's default when the ticket gives none), "" in a queue
// without partitions.
func (q *Queue) PartitionOf(attrs map[string]matchrules.Value) string {
	if q.PartitionBy == "" {
		return ""
	}
	v, ok := attrs[q.PartitionBy]
	if !ok {
		if d := q.Attributes[q.PartitionBy].Default; d != nil {
			v = *d
		}
	}
	return v.Str
}

// addPartitionFaults checks partition_by: the attribute of an equal rule that binds every
// ticket for its whole wait (one whose optional_after_s lets tickets meet across values
// after a while cannot be split along them). A ready check and an allocator are allowed: a
// partition's leader proposes its matches, the queue's resolves the proposals (queueWide).
func (q *Queue) addPartitionFaults(f *apperr.Fields) {
	if q.PartitionBy == "" {
		return
	}
	binding := slices.ContainsFunc(q.Rules, func(r matchrules.Rule) bool {
		return r.Kind == matchrules.RuleEqual && r.Attribute == q.PartitionBy && r.OptionalAfterS == nil
	})
	switch {
	case q.Attributes[q.PartitionBy].Type != matchrules.TypeString && binding:
		f.Add("partition_by", "must name a string attribute: a number's values are not partitions")
	case !binding:
		f.Add("partition_by", "must name the attribute of an equal rule without optional_after_s: tickets of two values must never meet (no rule reads %q so)", q.PartitionBy)
	}
}

// addPartitionValueFault refuses a ticket whose partition value cannot be a partition's.
func addPartitionValueFault(f *apperr.Fields, q *Queue, attrs map[string]matchrules.Value) {
	if v := q.PartitionOf(attrs); strings.Contains(v, partitionSep) {
		f.Add("attributes."+q.PartitionBy, "must not hold the control character U+001F: it is the queue's partition_by")
	}
}

// addBackfillPartitionFault refuses a backfill of a partitioned queue that says no
// partition: its match was played in one, and only that partition's leader may fill it.
func addBackfillPartitionFault(f *apperr.Fields, q *Queue, attrs map[string]matchrules.Value) {
	if !q.Partitioned() {
		return
	}
	if q.PartitionOf(attrs) == "" {
		f.Add("attributes."+q.PartitionBy, "is required: the queue is partitioned by it, and the backfill's match was played in one partition")
		return
	}
	addPartitionValueFault(f, q, attrs)
}
