package queueleader

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A partitioned queue's runners (queue/partition.go; the units a queue needs and a ticket's
// runner are registry.go's): the share of the partitions a replica
// leads, and what a partition's runner does besides the loop.

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
	held      map[*Runner]bool   // the partition runners that lead, or are about to try
	searching map[*Runner][2]int // each partition's tickets and players at its last tick
}

// hold says whether r may lead its partition now: it does and the replica holds no more than
// its share, or it does not and the replica holds less. Over its share (a replica came up),
// r lets its partition go; taking, r counts as held until release.
func (ps *partitionSet) hold(r *Runner) bool {
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
func (ps *partitionSet) leaving(r *Runner) {
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
func (ps *partitionSet) searchingNow(r *Runner, tickets, players int) (int, int) {
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
func (r *Runner) leadUnit(ctx context.Context) (bool, error) {
	if r.part != "" && !r.set.hold(r) {
		if r.leading.Load() {
			r.deps.Logger.Info("queue: letting a partition go to another replica (over this one's share)",
				"queue", r.def.Load().Name, "partition", r.part, "share", r.set.share.Load())
			r.resign()
		}
		return false, nil
	}
	ok, err := abandonable(ctx, func() (bool, error) { return r.deps.Store.Lead(ctx, r.key) })
	if !ok || err != nil {
		r.set.leaving(r)
	}
	return ok, err
}

// queueWide is the tick of a partitioned queue's own runner: the partitions' runners
// propose their matches (a ready check's, an allocator's), but the proposals and the matches
// being placed are the queue's in the stores, so their deadlines are expired and their
// placements started here, once for the queue, by its leader.
func (r *Runner) queueWide(ctx context.Context, q queue.Queue) {
	r.expireProposals(ctx, q, r.deps.Clock.Now().UTC())
	r.placeMatches(ctx, q)
}

// markLeading sets the leadership metrics of the runner's unit.
func (r *Runner) markLeading(queue string, yes bool) {
	if r.part == "" {
		r.deps.Metrics.Leading(queue, yes) // the queue's (a partitioned one's: its webhooks)
	}
	if !r.whole {
		r.deps.Metrics.LeadingPartition(queue, r.part, yes)
	}
}

// kickDeliverer wakes the queue's webhook deliverer after a commit, if it runs here (a
// partition's runner delivers none itself; another replica's polls every second).
func (r *Runner) kickDeliverer(queue string) {
	d := r
	if r.part != "" {
		var ok bool
		if d, ok = r.reg.Runner(queue); !ok {
			return
		}
	}
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// changes are the changes of the runner's unit since its cursor: a partition's own only, read
// so by the store, rather than the queue's read by each of its partitions' runners.
func (r *Runner) changes(ctx context.Context, q queue.Queue) ([]queue.Ticket, queue.Cursor, error) {
	return r.deps.Store.Changes(ctx, q, r.part, r.cursor)
}
