package queueleader

import (
	"context"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The replica's runners (loop.go) as one registry: the service's Run brings them up to the
// stored definitions (Sync) and stops them (Stop); a request finds a queue's or a ticket's
// runner, whether a queue is partitioned, and a queue's tick marks here.

// Registry is the replica's runners. Sync and Stop are one goroutine's (the service's Run);
// the reads are any caller's.
type Registry struct {
	deps    *Deps              // what its runners use of the replica
	started map[string]*Runner // by key: sync's and stop's own
	runners sync.Map           // PartitionKey -> *Runner, while Run runs
	parts   sync.Map           // partitioned queue's name -> *partitionSet, while Run runs
	ticked  sync.Map           // queue name or PartitionKey -> *tickMarks
}

// New is a registry of no runners, whose runners will use d.
func New(d Deps) *Registry {
	return &Registry{deps: &d, started: map[string]*Runner{}}
}

// Sync starts a runner for each new queue, gives the others their current definition,
// and stops those whose queue is gone.
func (g *Registry) Sync(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	qs, err := g.deps.Store.ListQueues(rctx)
	if err != nil {
		if ctx.Err() == nil {
			g.deps.Logger.Warn("queue: cannot read the queue definitions", "err", err)
		}
		return
	}
	live := make(map[string]bool, len(qs))
	for _, q := range qs {
		for _, u := range g.units(rctx, q) {
			live[u.key] = true
			if r, ok := g.started[u.key]; ok && r.whole == u.whole {
				r.def.Store(&q)
				continue
			} else if ok { // partition_by set or removed: the queue's runner is another kind
				r.stop()
			}
			g.started[u.key] = g.start(ctx, q, u)
		}
	}
	for key, r := range g.started {
		if !live[key] {
			r.stop()
			delete(g.started, key)
			g.runners.Delete(key)
			if name, value := queue.SplitPartitionKey(key); value == "" {
				g.deps.Metrics.Forget(name)
				g.parts.Delete(name)
			} else {
				g.deps.Metrics.LeadingPartition(name, value, false)
			}
		}
	}
}

// Stop stops every runner Sync started; their queues are resigned as they stop.
func (g *Registry) Stop() {
	for key, r := range g.started {
		r.stop()
		delete(g.started, key)
		g.runners.Delete(key)
	}
}

func (g *Registry) start(parent context.Context, q queue.Queue, u unit) *Runner {
	ctx, cancel := context.WithCancel(parent)
	r := &Runner{deps: g.deps, reg: g, unit: u, cancel: cancel, kick: make(chan struct{}, 1), delivered: make(chan struct{}), ctx: ctx}
	r.def.Store(&q)
	// Found by Stats before its first tick: a tick that ended before the runner was stored
	// would leave a caller told of that tick (Ticked, a long-poll) reading stats from nowhere.
	g.runners.Store(u.key, r)
	r.done.Go(func() { r.loop(ctx) })
	if u.part != "" { // the queue's runner delivers its webhooks
		close(r.delivered)
	} else {
		r.done.Go(func() { defer close(r.delivered); r.deliverLoop(ctx) })
	}
	return r
}

// Driven registers a runner of q (a queue without partitions) that nothing starts, and
// returns its tick: for a simulation that drives the leader tick by tick on a fake clock,
// with no goroutine.
func (g *Registry) Driven(q queue.Queue) func(ctx context.Context) {
	r := &Runner{deps: g.deps, reg: g, unit: unit{key: q.Name}}
	r.def.Store(&q)
	g.runners.Store(q.Name, r)
	return func(ctx context.Context) { r.tick(ctx, q) }
}

// Runner is the runner here of key (a queue's name, or a PartitionKey).
func (g *Registry) Runner(key string) (*Runner, bool) {
	v, ok := g.runners.Load(key)
	if !ok {
		return nil, false
	}
	return v.(*Runner), true
}

// Partitioned says whether queue is partitioned, as this replica's runners know it.
func (g *Registry) Partitioned(queueName string) bool {
	_, ok := g.parts.Load(queueName)
	return ok
}

// PartitionOf is t's partition, and ok, when this replica's runners know its queue as
// partitioned.
func (g *Registry) PartitionOf(t *queue.Ticket) (string, bool) {
	v, ok := g.parts.Load(t.Queue)
	if !ok {
		return "", false
	}
	q := v.(*partitionSet).def.Load()
	if q == nil {
		return "", false
	}
	return q.PartitionOf(t.Attributes), true
}

// RunnerOf is the runner here of t's queue, or of its partition in a partitioned queue.
func (g *Registry) RunnerOf(t *queue.Ticket) (*Runner, bool) {
	key := t.Queue
	if part, ok := g.PartitionOf(t); ok {
		key = queue.PartitionKey(t.Queue, part)
	}
	return g.Runner(key)
}

// PartitionRunners are the runners here of queue's partitions, by value.
func (g *Registry) PartitionRunners(queueName string) iter.Seq2[string, *Runner] {
	return func(yield func(string, *Runner) bool) {
		g.runners.Range(func(k, v any) bool {
			if name, value := queue.SplitPartitionKey(k.(string)); name == queueName && value != "" {
				return yield(value, v.(*Runner))
			}
			return true
		})
	}
}

// units are the runners q needs: itself, or itself as a whole and each partition (at most
// MaxPartitions). A store that cannot list the partitions or the replicas now leaves the last
// known ones.
func (g *Registry) units(ctx context.Context, q queue.Queue) []unit {
	if !q.Partitioned() {
		g.parts.Delete(q.Name) // partition_by removed: its stats are the queue's own again
		return []unit{{key: q.Name}}
	}
	v, _ := g.parts.LoadOrStore(q.Name, &partitionSet{held: map[*Runner]bool{}, searching: map[*Runner][2]int{}})
	set := v.(*partitionSet)
	set.def.Store(&q)
	values, replicas, err := g.deps.Store.Partitions(ctx, q)
	if err != nil {
		g.deps.Logger.Warn("queue: cannot list the queue's partitions", "queue", q.Name, "err", err)
		values = g.known(q.Name)
	}
	if err != nil || replicas < 1 {
		replicas = 1 // alone, as far as this replica can tell: it leads what it can
	}
	values = g.withLeading(q.Name, values)
	if len(values) > queue.MaxPartitions {
		g.deps.Logger.Warn("queue: more partitions than a replica runs; the last are not ticked",
			"queue", q.Name, "partitions", len(values), "max", queue.MaxPartitions)
		values = values[:queue.MaxPartitions]
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
func (g *Registry) withLeading(queueName string, values []string) []string {
	for p, r := range g.PartitionRunners(queueName) {
		if r.leading.Load() && !slices.Contains(values, p) {
			values = append(values, p)
		}
	}
	slices.Sort(values)
	return values
}

// known are the partitions this replica runs for queue now.
func (g *Registry) known(queueName string) []string {
	var out []string
	for p := range g.PartitionRunners(queueName) {
		out = append(out, p)
	}
	return out
}

// TickSince says whether a tick of key (a queue's name, or a PartitionKey) that began at at or
// later has ended here, and if not, the channel closed when the next one ends: for a test that
// advances its clock and waits for the tick it brings.
func (g *Registry) TickSince(key string, at time.Time) (bool, <-chan struct{}) {
	return g.tickMarks(key).since(at)
}

// tickMarks are key's (a queue's name, or a PartitionKey), made at the first ask, before or
// after its runner starts.
func (g *Registry) tickMarks(key string) *tickMarks {
	m, _ := g.ticked.LoadOrStore(key, &tickMarks{})
	return m.(*tickMarks)
}

// tickMarks say when a queue's last tick here began, and wake whoever waits for a tick to end
// (for tests that advance their clock and wait for the tick it brings).
type tickMarks struct {
	mu    sync.Mutex
	at    time.Time
	ended chan struct{} // closed, and replaced, as each tick ends
}

func (m *tickMarks) done(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.at = at
	if m.ended != nil {
		close(m.ended)
	}
	m.ended = make(chan struct{})
}

// since says whether a tick that began at at or later has ended, and if not, the channel
// closed when the next one ends.
func (m *tickMarks) since(at time.Time) (bool, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended == nil {
		m.ended = make(chan struct{})
	}
	return !m.at.IsZero() && !m.at.Before(at), m.ended
}
