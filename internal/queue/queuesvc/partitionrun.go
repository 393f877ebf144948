package queuesvc

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// unit is what one runner leads: a queue without partitions (key its name), a partitioned
// queue as a whole (whole: it ticks nothing, and leads the queue for its webhook outbox), or
// one partition of it (part, led under PartitionKey).
type unit struct {
	key   string
	part  string
	whole bool
	set   *partitionSet // the partitioned queue's, shared by its runners here; nil otherwise
}

// partitionSet is what a partitioned queue's runners on this replica share: the definition,
// the share of its partitions this replica may lead (no more than the partitions over the
// live replicas, rounded up, so that every replica up leads some), and those it leads.
type partitionSet struct {
	def   atomic.Pointer[queue.Queue]
	share atomic.Int64

	mu        sync.Mutex
	held      map[*runner]bool   // the partition runners that lead, or are about to try
	searching map[*runner][2]int // each partition's tickets and players at its last tick
}

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

// hold says whether r may lead its partition now: it does and the replica holds no more than
// its share, or it does not and the replica holds less. Over its share (a replica came up),
// r lets its partition go; taking, r counts as held until release.
func (ps *partitionSet) hold(r *runner) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	share := int(ps.share.Load())
	if ps.held[r] {
		if len(ps.held) <= share {
			return true
		}
		delete(ps.held, r)
		return false
	}
	if len(ps.held) >= share {
		return false
	}
	ps.held[r] = true
	return true
}

// leaving says r no longer leads its partition (or did not get it).
func (ps *partitionSet) leaving(r *runner) {
	if ps == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.held, r)
	delete(ps.searching, r)
}

// searchingNow records r's searching tickets and players, and returns the queue's on this
// replica (the partitions it leads): the gauges are the queue's.
func (ps *partitionSet) searchingNow(r *runner, tickets, players int) (int, int) {
	if ps == nil {
		return tickets, players
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.searching[r] = [2]int{tickets, players}
	tickets, players = 0, 0
	for _, n := range ps.searching {
		tickets, players = tickets+n[0], players+n[1]
	}
	return tickets, players
}

// leadUnit is Lead of the runner's unit: a partition past the replica's share is not asked
// for, and one this replica leads past it is resigned, for a replica that leads less to take.
func (r *runner) leadUnit(ctx context.Context) (bool, error) {
	if r.part != "" && !r.set.hold(r) {
		if r.leading.Load() {
			r.s.logger.Info("queue: letting a partition go to another replica (over this one's share)",
				"queue", r.def.Load().Name, "partition", r.part, "share", r.set.share.Load())
			r.resign()
		}
		return false, nil
	}
	ok, err := abandonable(ctx, func() (bool, error) { return r.s.store.Lead(ctx, r.key) })
	if !ok || err != nil {
		r.set.leaving(r)
	}
	return ok, err
}

// queueWide is the tick of a partitioned queue's own runner: the partitions' runners
// propose their matches (a ready check's, an allocator's), but the proposals and the matches
// being placed are the queue's in the stores, so their deadlines are expired and their
// placements started here, once for the queue, by its leader.
func (r *runner) queueWide(ctx context.Context, q queue.Queue) {
	r.expireProposals(ctx, q, r.s.now().UTC())
	r.placeMatches(ctx, q)
}

// markLeading sets the leadership metrics of the runner's unit.
func (r *runner) markLeading(queue string, yes bool) {
	if r.part == "" {
		r.s.metrics.leading(queue, yes) // the queue's (a partitioned one's: its webhooks)
	}
	if !r.whole {
		r.s.metrics.leadingPartition(queue, r.part, yes)
	}
}

// kickDeliverer wakes the queue's webhook deliverer after a commit, if it runs here (a
// partition's runner delivers none itself; another replica's polls every second).
func (r *runner) kickDeliverer(queue string) {
	d := r
	if r.part != "" {
		v, ok := r.s.runners.Load(queue)
		if !ok {
			return
		}
		d = v.(*runner)
	}
	select {
	case d.kick <- struct{}{}:
	default:
	}
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

// changes are the changes of the runner's unit since its cursor: a partition's own only, read
// so by the store, rather than the queue's read by each of its partitions' runners.
func (r *runner) changes(ctx context.Context, q queue.Queue) ([]queue.Ticket, queue.Cursor, error) {
	if r.part == "" {
		return r.s.store.Changes(ctx, q.Name, r.cursor)
	}
	return r.s.store.PartitionChanges(ctx, q, r.part, r.cursor)
}
