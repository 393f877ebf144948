package queueleader

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuestats"
)

// The runner, the leader's loop of one queue or partition (the Registry starts and stops the
// runners: registry.go): it leads, renews its lease, loads the queue's changes, runs the pass,
// proposes or commits what it decided, and keeps the stats.

// Runner ticks one queue, or one partition of a partitioned queue (queue/partition.go). Its fields
// other than def belong to its goroutine.
type Runner struct {
	deps *Deps     // what it uses of the replica, shared by its runners
	reg  *Registry // the replica's runners, this one among them
	def  atomic.Pointer[queue.Queue]
	unit
	cancel context.CancelFunc
	done   sync.WaitGroup
	kick   chan struct{} // wakes the webhook deliverer
	// delivered is closed when the deliverer has returned: the loop resigns after it.
	delivered chan struct{}

	leading atomic.Bool
	cursor  queue.Cursor
	waiting map[string]queue.Ticket // the queue's searching tickets, while leading
	// the ids of the last tick's list, oldest first, and those loaded since (sortedWaiting)
	order, arrived []string
	// list is the last tick's list, its array used again rather than made at each tick (the
	// leader's garbage: docs/performance.md, the soak's sixth session).
	list  []queue.Ticket
	track *queuestats.Tracker // their counters and the recent history, while leading
	stats atomic.Pointer[queue.Stats]
	// snapped and published are when track last made a snapshot and one was published.
	snapped, published time.Time
	// waitingOn is why each ticket left searching by the last pass waits, while leading.
	waitingOn atomic.Pointer[queue.Waits]
	// openProposals: the queue may have open proposals to expire (queue/acceptance.go).
	openProposals bool
	// ctx is the runner's; allocating holds the ids of the matches it is placing
	// (queue/allocator.go).
	ctx        context.Context
	allocating sync.Map
	held       map[string]heldTicket // while leading (acceptance.go)
	// fn and shadowK are the queue's match function's calls and shadow measure, while
	// leading (matchfunction.go, matchfunction_shadow.go).
	fn      *functionState
	shadowK *shadowTracker
	shadowC shadowCall // the shadow call beside the ticks (matchfunction_shadowcall.go)
}

func (r *Runner) stop() {
	r.cancel()
	r.done.Wait()
}

// Leading says whether the runner leads its queue or partition now.
func (r *Runner) Leading() bool { return r.leading.Load() }

// Def is the queue's definition the runner ticks by.
func (r *Runner) Def() *queue.Queue { return r.def.Load() }

// Stats are the queue's (or partition's) stats of the last snapshot while leading, nil
// otherwise.
func (r *Runner) Stats() *queue.Stats { return r.stats.Load() }

// WaitingOn is why each ticket the last pass left searching waits, while leading.
func (r *Runner) WaitingOn() *queue.Waits { return r.waitingOn.Load() }

// loop ticks the queue every q.Tick on the service's clock, and renews the lease between
// ticks. Each wake is due at a time (the last tick's start and a Tick, or the next renewal),
// so that a clock that moved on while the tick ran wakes the loop at once: a test that
// advances its fake clock during a tick loses no tick.
func (r *Runner) loop(ctx context.Context) {
	clock := r.deps.Clock
	timer := clock.NewTimer(0)
	defer timer.Stop()
	var ticked time.Time // when the last tick started
	for {
		select {
		case <-ctx.Done():
			<-r.delivered // its last post answered and acknowledged before the lease ends
			r.resign()
			return
		case <-timer.Chan():
		}
		q := *r.def.Load()
		if now := clock.Now(); ticked.IsZero() || now.Sub(ticked) >= q.Tick {
			ticked = now
			r.tick(ctx, q)
			// The next wake is set before the tick is marked done: a test that advances its
			// clock once the tick is done would otherwise move it between the wait's reckoning
			// and the timer's reset, and the timer would be due a whole wait after the tick
			// the test waits for.
			timer.Reset(r.nextWake(q, ticked))
			r.reg.tickMarks(q.Name).done(now)
			if r.part != "" {
				r.reg.tickMarks(r.key).done(now) // for a test or benchmark that waits on each partition
			}
			continue
		}
		r.keepLease(ctx, q)
		timer.Reset(r.nextWake(q, ticked))
	}
}

// nextWake is how long the loop sleeps: until the next tick, or the next renewal of the
// store's lease if that comes first (a queue that ticks once a minute would otherwise lose
// a 10 s lease between its ticks).
func (r *Runner) nextWake(q queue.Queue, ticked time.Time) time.Duration {
	wait := max(ticked.Add(q.Tick).Sub(r.deps.Clock.Now()), 0)
	if ls, ok := r.deps.Store.(queue.LeaseStore); ok {
		wait = min(wait, ls.LeaseRenewal())
	}
	return wait
}

// keepLease renews the lease between two ticks.
func (r *Runner) keepLease(parent context.Context, q queue.Queue) {
	ctx, cancel := context.WithTimeout(parent, 5*time.Second)
	defer cancel()
	r.lead(ctx, q)
}

// lead tries to lead the queue (renewing the lease), and drops the leader's view when it does
// not lead it.
func (r *Runner) lead(ctx context.Context, q queue.Queue) bool {
	log := r.deps.Logger.With("queue", q.Name)
	if r.part != "" {
		log = log.With("partition", r.part)
	}
	lead, err := r.leadUnit(ctx)
	if errors.Is(err, queue.ErrTakeoverRefused) {
		r.deps.Metrics.TakeoverRefused(q.Name)
	}
	if err != nil || !lead {
		if r.leading.Load() {
			log.Warn("queue: no longer leading", "err", err)
			r.set.leaving(r)
		}
		r.leading.Store(false)
		r.waiting, r.cursor, r.track, r.held = nil, 0, nil, nil
		r.fn, r.shadowK = nil, nil
		r.order, r.arrived, r.list = nil, nil, nil
		r.stats.Store(nil)
		r.waitingOn.Store(nil)
		r.markLeading(q.Name, false)
		return false
	}
	if !r.leading.Load() {
		log.Info("queue: leading")
		r.leading.Store(true)
		r.openProposals = true // a previous leader's, to expire
		r.takeBackoff(ctx, q)
		r.markLeading(q.Name, true)
	}
	return true
}

func (r *Runner) resign() {
	if !r.leading.Load() {
		return
	}
	q := r.def.Load()
	ctx, cancel := context.WithTimeout(context.Background(), resignWait)
	defer cancel()
	if _, err := abandonable(ctx, func() (bool, error) { return true, r.deps.Store.Resign(ctx, r.key) }); err != nil {
		r.deps.Logger.Warn("queue: resigning failed; the lock goes with the session", "queue", q.Name, "partition", r.part, "err", err)
	}
	r.leading.Store(false)
	r.set.leaving(r)
	r.markLeading(q.Name, false)
}

// resignWait bounds a runner's resignation as it stops: a database that does not answer must
// not hold up a shutdown, and a lock not given back goes with the store's session.
const resignWait = 500 * time.Millisecond

// abandonable runs a call on the leadership connection, which the store bounds by its own
// timeout rather than by ctx (a cancelled round trip would close the connection, and every
// lock of the process with it), and stops waiting for it when ctx ends: a frozen database held
// a stopping runner, and with it the shutdown, for that whole timeout.
func abandonable(ctx context.Context, call func() (bool, error)) (bool, error) {
	type answer struct {
		ok  bool
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ok, err := call()
		done <- answer{ok, err}
	}()
	select {
	case a := <-done:
		return a.ok, a.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// tick is one tick of the queue: lead or not, and if leading, load the changes since the last
// tick, run the pass and write what it decided.
func (r *Runner) tick(parent context.Context, q queue.Queue) {
	ctx, cancel := context.WithTimeout(parent, max(5*q.Tick, 5*time.Second)+functionTimeout(q))
	defer cancel()
	log := r.deps.Logger.With("queue", q.Name, "partition", r.part)
	if !r.lead(ctx, q) {
		return
	}
	if r.whole { // a partitioned queue as a whole: its webhooks, and what is the queue's
		r.queueWide(ctx, q)
		return
	}
	start := r.deps.Clock.Now()
	if err := r.load(ctx, q); err != nil {
		log.Warn("queue: cannot load the queue's changes", "err", err)
		return
	}
	ctx, span := r.tickSpan(ctx, q)
	defer span.End()
	now := r.deps.Clock.Now().UTC()
	if r.part == "" { // a partition's are the queue's runner's (queueWide)
		r.expireProposals(ctx, q, now)
		r.placeMatches(ctx, q)
	}
	list := r.sortedWaiting()
	w, err := r.pass(ctx, q, list, now)
	if !r.leading.Load() { // lost during a match function's call
		return
	}
	if err != nil {
		// Tickets still expire: a pass that fails every tick must not keep them forever.
		log.Error("queue: the matching pass failed; expiring only", "err", err)
		w = queue.TickWrite{Expired: expiredByTTL(list, now)}
	}
	spanMatches(span, w) // the pass's, before any becomes a proposal (a ready check, a placement)
	r.propose(ctx, q, &w, now)
	r.waitingOn.Store(cmp.Or(w.Waiting, &queue.Waits{}))
	if len(w.Matches)+len(w.Expired) > 0 {
		w.At, w.Partition, w.ClaimFor = now, r.part, q.TicketTTL
		done, err := queue.CommitTick(ctx, r.deps.Store, q.Name, w)
		if err != nil {
			log.Warn("queue: cannot write the tick; its matches are retried at the next tick", "err", err)
			endSpan(span, err)
			return
		}
		r.committed(q.Name, w, done, now)
		r.shadowRules(q, list, w, done, now)
		r.kickDeliverer(q.Name)
	}
	r.shadow(q, list, now)                       // after the commit too, with the pool the pass had
	r.deps.Metrics.RuleBlocks(q.Name, w.Waiting) // after the commit: it holds up no match
	players := 0
	for _, t := range r.waiting {
		players += len(t.Players)
	}
	searching, players := r.set.searchingNow(r, len(r.waiting), players)
	r.deps.Metrics.Ticked(q.Name, r.deps.Clock.Since(start), searching, players)
	var oldest time.Time
	if len(list) > 0 {
		oldest = list[0].CreatedAt
	}
	r.snapshot(ctx, q.Name, now, oldest)
}

// snapshot rebuilds the queue's stats from the counters, at most every StatsRefresh, and
// publishes them to the store every StatsPublish for the replicas that do not lead it.
func (r *Runner) snapshot(ctx context.Context, queueName string, now, oldest time.Time) {
	if !r.snapped.IsZero() && now.Sub(r.snapped) < queue.StatsRefresh && now.After(r.snapped) {
		return
	}
	r.snapped = now
	st := r.track.Snapshot(queueName, now, oldest)
	st.Partition = r.part
	if r.part != "" {
		st.Leader = r.deps.Instance
	}
	if w := r.waitingOn.Load(); w != nil {
		st.WaitingOn = w.ByRule()
	}
	if r.shadowK != nil {
		st.Shadow = r.shadowK.stats(now)
	}
	st.FunctionBackoff = r.fn.published()
	r.stats.Store(st)
	r.deps.Metrics.Bands(queueName, st)
	if r.published.IsZero() || now.Sub(r.published) >= queue.StatsPublish || !now.After(r.published) {
		r.published = now
		if err := r.deps.Store.PublishStats(ctx, queueName, *st); err != nil {
			r.deps.Logger.Debug("queue: cannot publish the stats", "queue", queueName, "err", err)
		}
	}
}

// sortedWaiting is the waiting tickets, oldest first (ties by id). It starts from the last
// tick's order, the tickets loaded since after it, so that the sort finds the list nearly in
// order: sorted from the map's random order at every tick, the sort was a large part of the
// leader's work between a match's time and its commit (docs/performance.md, "Queue feeds"). The
// list is the runner's until its next call, which overwrites it.
func (r *Runner) sortedWaiting() []queue.Ticket {
	list := r.list[:0]
	again := make(map[string]bool, len(r.arrived)) // loaded since: listed from arrived
	for _, id := range r.arrived {
		again[id] = true
	}
	for _, id := range r.order {
		if t, ok := r.waiting[id]; ok && !again[id] {
			list = append(list, t)
		}
	}
	for _, id := range r.arrived {
		if t, ok := r.waiting[id]; ok && again[id] {
			list = append(list, t)
			again[id] = false // listed once, however often it was loaded
		}
	}
	slices.SortFunc(list, func(a, b queue.Ticket) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
	r.order, r.arrived = r.order[:0], r.arrived[:0]
	for _, t := range list {
		r.order = append(r.order, t.ID)
	}
	clear(list[len(list):cap(list)]) // tickets gone since: not kept alive
	r.list = list
	return list
}

// load brings the in-memory view up to date with the queue's changes since the last tick.
func (r *Runner) load(ctx context.Context, q queue.Queue) error {
	changes, cur, err := r.changes(ctx, q)
	if err != nil {
		return err
	}
	if r.waiting == nil {
		r.waiting = make(map[string]queue.Ticket, len(changes))
		r.track, r.snapped, r.published = queuestats.NewTracker(), time.Time{}, time.Time{}
		r.held = make(map[string]heldTicket)
	}
	counted := map[string]bool{}
	for _, t := range changes {
		r.heldChanged(q.Name, t, r.deps.Clock.Now().UTC(), counted)
		if t.Status == queue.Searching {
			r.waiting[t.ID] = t
			r.arrived = append(r.arrived, t.ID)
			r.track.Add(t)
		} else if old, ok := r.waiting[t.ID]; ok {
			delete(r.waiting, t.ID)
			r.track.Remove(old) // cancelled, or ended by another leader
		}
	}
	r.cursor = cur
	return nil
}

// committed drops what a tick matched or expired from the view, and records it.
func (r *Runner) committed(queue string, w queue.TickWrite, done queue.TickCommitted, now time.Time) {
	stored := make(map[string]bool, len(done.Matches))
	for _, id := range done.Matches {
		stored[id] = true
	}
	for _, m := range w.Matches {
		if !stored[m.ID] {
			continue
		}
		var waits []time.Duration
		var samples []queuestats.WaitSample
		for _, id := range m.Tickets() {
			if t, ok := r.waiting[id]; ok {
				wait := now.Sub(t.CreatedAt)
				waits = append(waits, wait)
				delete(r.waiting, id)
				if band, ok := r.track.Remove(t); ok {
					samples = append(samples, queuestats.WaitSample{At: now, Band: band, Seconds: wait.Seconds()})
				}
			}
		}
		r.track.Matched(now, m.AverageDifference, m.BackfillOf != "", samples)
		r.track.HourMatched(now, m, samples)
		r.deps.Metrics.Matched(queue, m, waits)
		r.deps.Metrics.Waited(queue, samples)
	}
	reasons := make(map[string]string, len(w.Expired))
	for _, e := range w.Expired {
		reasons[e.TicketID] = e.Reason
	}
	for _, id := range done.Expired {
		if t, ok := r.waiting[id]; ok {
			r.track.Remove(t)
			r.track.Expired(now)
			r.track.HourExpired(now, reasons[id])
		}
		delete(r.waiting, id)
		r.deps.Metrics.ExpiredTicket(queue, reasons[id])
	}
	r.deps.Metrics.Claims(queue, done)
}

// expiredByTTL is the expiry part of a pass alone: the tickets whose time is up.
func expiredByTTL(waiting []queue.Ticket, now time.Time) []queue.Expiry {
	var out []queue.Expiry
	for _, t := range waiting {
		if !now.Before(t.ExpiresAt) {
			out = append(out, queue.Expiry{TicketID: t.ID, Reason: matchpool.ReasonTTL})
		}
	}
	return out
}

// tickSpan starts the span of a tick with waiting tickets; a tick with none starts none (a
// leader ticks each queue ten times a second).
func (r *Runner) tickSpan(ctx context.Context, q queue.Queue) (context.Context, trace.Span) {
	if len(r.waiting) == 0 {
		return ctx, noSpan
	}
	return r.deps.Tracer.Start(ctx, "queue tick", trace.WithAttributes(AttrQueue.String(q.Name), attrWaiting.Int(len(r.waiting))))
}
