// Package queuefeed is the queue's event fan-out: a replica's one reader of each queue's
// events while it has waiters, handing every event, and the tickets it moved, to all the
// long-polls and streams that wait on the queue.
package queuefeed

import (
	"context"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Feeds are this replica's readers of the queues' events, one per queue while it has waiters
// (long-polls, event streams): each new event is read from the store once and handed to every
// waiter here, so that the store's work per event does not grow with the number of waiters
// (each waiter used to read the queue's new events itself at every notification:
// TestWaitersShareOneReadOfTheEvents; docs/performance.md, "Queue feeds").
type Feeds struct {
	store  queue.EventStore
	linger time.Duration // how long a feed without waiters keeps reading

	mu      sync.Mutex
	byQueue map[string]*Feed
	// changed is closed, and dropped, at the next change of a feed's waiters, watches or
	// head (changedLocked): what a test that waits for long-polls to begin waiting waits on,
	// instead of polling. Nil until someone asks (nextChange), so it costs a feed nothing.
	changed chan struct{}
}

// feedBuffer is how many of its latest events a feed keeps at least (at most twice as many)
// for the streams that follow it; a stream further behind reads from the store.
const feedBuffer = 4096

// feedRetry is the pause after a failed read of the store.
const feedRetry = 250 * time.Millisecond

// Feed is one queue's reader of its events, shared by the waiters that acquired it.
type Feed struct {
	Queue string
	ready chan struct{} // closed once head is read (or failed: err)
	err   error

	// Under feeds.mu:
	refs    int         // waiters using the feed
	idle    *time.Timer // stops the feed once it has had no waiter for linger
	stop    context.CancelFunc
	stopped bool
	buf     queue.EventLog          // the latest events read; its head the last read
	moved   chan struct{}           // closed, and replaced, when events come or the feed stops
	watch   map[string]*TicketWatch // by ticket id: the long-polls waiting for its next event
	// ownerMoved: by owner, closed (and dropped) when events of its tickets come or the feed
	// stops, for the streams of keys that read their own tickets' events only: woken at
	// every batch of every other key's events, a key's many held streams were a large share
	// of the leader's CPU (docs/performance.md, the soak's sixth session).
	ownerMoved map[string]chan struct{}
	// ticketMoved: the same by ticket, for the streams of one ticket's events, with the
	// count of streams waiting on each: the last one to leave drops it, for a ticket whose
	// last event came before its stream (or an id of no ticket) would keep it for ever.
	ticketMoved map[string]*ticketWake
	// start is the head when the feed began: it has read every event after it. ownerLast
	// is, by owner, the Seq of the last of its tickets' events the feed read: a key's stream
	// that slept past the buffer, woken by nothing, learns from it that it missed nothing.
	start     int64
	ownerLast map[string]int64
}

// TicketWatch is the long-polls of one ticket waiting for its next event. done is closed at
// that event, with the ticket as the feed read it with the event (read true): the feed reads
// an event batch's tickets with the events, in one round trip, where each long-poll used to
// read its own as it woke (a read per waiter, all at once at every tick, queued for the
// pool's connections between a match and its long-polls' answers; docs/performance.md,
// "Feeds"), and then the feed in a second read. Without read (the ticket was purged, or the feed
// stopped) each reads the ticket itself.
type TicketWatch struct {
	Done    chan struct{}
	Ticket  queue.Ticket
	Read    bool
	waiters int // under feeds.mu: the long-polls holding it (unwatch)
}

// New is the feeds of store's queues, none running yet.
func New(store queue.EventStore) *Feeds {
	return &Feeds{store: store, linger: time.Minute, byQueue: make(map[string]*Feed)}
}

// Acquire returns the queue's feed, started if need be, once it knows the queue's newest
// event; release it after use.
func (fs *Feeds) Acquire(ctx context.Context, queue string) (*Feed, error) {
	fs.mu.Lock()
	f, ok := fs.byQueue[queue]
	if !ok {
		f = &Feed{Queue: queue, ready: make(chan struct{}), moved: make(chan struct{}), watch: make(map[string]*TicketWatch)}
		fs.byQueue[queue] = f
		fctx, stop := context.WithCancel(context.Background())
		f.stop = stop
		go fs.run(fctx, f)
	}
	f.refs++
	if f.idle != nil {
		f.idle.Stop()
		f.idle = nil
	}
	fs.changedLocked()
	fs.mu.Unlock()
	select {
	case <-f.ready:
	case <-ctx.Done():
		fs.Release(f)
		return nil, ctx.Err()
	}
	if f.err != nil {
		fs.Release(f)
		return nil, f.err
	}
	return f, nil
}

// Head is the Seq of the last event the queue's feed read, if a feed of it runs.
func (fs *Feeds) Head(queue string) (int64, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.byQueue[queue]
	if !ok || f.stopped {
		return 0, false
	}
	select {
	case <-f.ready:
	default:
		return 0, false // its first read of the head is under way
	}
	return f.buf.Head(), f.err == nil
}

// OnlyQueue is the queue of this replica's one feed, if it has exactly one.
func (fs *Feeds) OnlyQueue() (string, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.byQueue) != 1 {
		return "", false
	}
	for q := range fs.byQueue {
		return q, true
	}
	return "", false
}

// Release gives back a feed; the last waiter's release leaves it reading for linger, for the
// next long-poll of the same clients.
func (fs *Feeds) Release(f *Feed) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.refs--
	fs.changedLocked()
	if f.refs > 0 {
		return
	}
	f.idle = time.AfterFunc(fs.linger, func() {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		if f.refs == 0 && fs.byQueue[f.Queue] == f {
			fs.stopLocked(f)
		}
	})
}

// stopLocked ends a feed; the caller holds fs.mu.
func (fs *Feeds) stopLocked(f *Feed) {
	fs.changedLocked()
	f.stopped = true
	delete(fs.byQueue, f.Queue)
	f.stop()
	close(f.moved)
	for owner, ch := range f.ownerMoved {
		close(ch)
		delete(f.ownerMoved, owner)
	}
	for ticket, w := range f.ticketMoved {
		close(w.ch)
		delete(f.ticketMoved, ticket)
	}
	for id, w := range f.watch {
		close(w.Done)
		delete(f.watch, id)
	}
}

// run reads the queue's events as they come. The first read of the head happens before any
// waiter is let in (ready), so that every event a waiter may miss in its own reads is one the
// feed hands it.
func (fs *Feeds) run(ctx context.Context, f *Feed) {
	page, err := fs.store.Events(ctx, f.Queue, 0, 0, false)
	head := page.Head
	fs.mu.Lock()
	f.buf, f.start, f.err = queue.EventLogAfter(head), head, err
	if err != nil && fs.byQueue[f.Queue] == f {
		fs.stopLocked(f) // its waiters get err; the next one starts another
	}
	fs.mu.Unlock()
	close(f.ready)
	fs.mu.Lock()
	fs.changedLocked() // its head is known: fs.head answers it now
	fs.mu.Unlock()
	if err != nil {
		return
	}
	for ctx.Err() == nil {
		// A wait that fails (its read of the head, on a database failing over) is tried again
		// like a failed read: a feed that stopped there left its streams waiting for good.
		err := fs.store.WaitEvents(ctx, f.Queue, head)
		var evs []queue.Event
		var tickets []queue.Ticket
		if err == nil {
			evs, tickets, err = fs.read(ctx, f, head)
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(feedRetry):
			}
			continue
		}
		if len(evs) == 0 {
			continue
		}
		head = evs[len(evs)-1].Seq
		for i := range evs {
			// Once here rather than once per stream that sends it: with a stream per
			// ticket, thousands of streams send each event of their key.
			evs[i].KeepEncoding()
		}
		byID := make(map[string]queue.Ticket, len(tickets))
		for _, t := range tickets {
			byID[t.ID] = t
		}
		fs.publish(f, evs, byID)
	}
}

// read reads the queue's events after head and, while long-polls watch tickets of the queue,
// the events' tickets with them: a feed that only streams follow reads no tickets.
func (fs *Feeds) read(ctx context.Context, f *Feed, head int64) ([]queue.Event, []queue.Ticket, error) {
	fs.mu.Lock()
	watched := len(f.watch) > 0
	fs.mu.Unlock()
	// Unwatched, a watch begun since finds no ticket with its event, and reads its own.
	page, err := fs.store.Events(ctx, f.Queue, head, 1000, watched)
	return page.Events, page.Tickets, err
}

// publish hands new events to the feed's waiters, and to the long-polls of their tickets the
// tickets read after them.
func (fs *Feeds) publish(f *Feed, evs []queue.Event, tickets map[string]queue.Ticket) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f.stopped {
		return
	}
	fs.changedLocked()
	f.buf.Append(evs...)
	if n := len(f.buf.Kept()); n > 2*feedBuffer {
		// Moved down once every feedBuffer events or so, not copied whole at each batch (the
		// leader's garbage: docs/performance.md, the soak's sixth session). Readers copy out
		// under fs.mu.
		f.buf.Drop(n - feedBuffer)
	}
	for _, e := range evs {
		if w, ok := f.watch[e.TicketID]; ok {
			w.Ticket, w.Read = tickets[e.TicketID]
			close(w.Done)
			delete(f.watch, e.TicketID)
		}
	}
	close(f.moved)
	f.moved = make(chan struct{})
	if f.ownerLast == nil {
		f.ownerLast = make(map[string]int64)
	}
	for _, e := range evs {
		f.ownerLast[e.Owner] = e.Seq
		if ch, ok := f.ownerMoved[e.Owner]; ok {
			close(ch)
			delete(f.ownerMoved, e.Owner)
		}
		if w, ok := f.ticketMoved[e.TicketID]; ok {
			close(w.ch)
			delete(f.ticketMoved, e.TicketID)
		}
	}
}

// WatchTicket returns the watch of the ticket's next event read by the feed (done also when
// the feed stops). Read its ticket only once done is closed.
func (fs *Feeds) WatchTicket(f *Feed, ticketID string) *TicketWatch {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	w, ok := f.watch[ticketID]
	if !ok {
		w = &TicketWatch{Done: make(chan struct{})}
		f.watch[ticketID] = w
	}
	w.waiters++
	fs.changedLocked()
	return w
}

// Unwatch gives back a watch that its long-poll no longer waits on (it answered without the
// ticket's next event: the ticket had changed already, or the wait ran out); the last one
// out removes it, so that a ticket whose last event has come leaves no watch behind in a
// feed that may read for days.
func (fs *Feeds) Unwatch(f *Feed, ticketID string, w *TicketWatch) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	w.waiters--
	if w.waiters == 0 && f.watch[ticketID] == w {
		delete(f.watch, ticketID)
	}
	fs.changedLocked()
}

// changedLocked wakes whoever waits for the feeds to change (nextChange); the caller holds
// fs.mu.
func (fs *Feeds) changedLocked() {
	if fs.changed != nil {
		close(fs.changed)
		fs.changed = nil
	}
}

// NextChange is closed at the next change of a feed's waiters, watches or head.
func (fs *Feeds) NextChange() <-chan struct{} {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.changed == nil {
		fs.changed = make(chan struct{})
	}
	return fs.changed
}

// Since returns up to limit of the feed's buffered events after after that scope keeps, and
// through, the Seq up to which it looked; or covered false when the buffer does not reach
// back to after (a stream further behind reads the store) or the feed has stopped; and the
// channel that the next events scope keeps close (or the feed's stop). Only the events kept
// are copied: every stream of the queue looks at each batch, and a key's stream keeps its own
// tickets' events (a copy of every event for each of a key's many streams was most of a
// replica's garbage: docs/performance.md, "Queue feeds").
func (fs *Feeds) Since(f *Feed, after int64, limit int, scope Scope) (evs []queue.Event, through int64, covered bool, moved <-chan struct{}) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	moved = f.movedFor(scope)
	switch {
	case f.stopped:
		return nil, after, false, moved
	case after >= f.buf.Head():
		return nil, after, true, moved
	case !scope.All && after >= f.start && f.ownerLast[scope.Owner] <= after:
		return nil, f.buf.Head(), true, moved
	}
	buffered, covered := f.buf.After(after)
	if !covered {
		return nil, after, false, moved
	}
	if scope.every() {
		evs = append(evs, buffered[:min(limit, len(buffered))]...)
		return evs, evs[len(evs)-1].Seq, true, moved
	}
	through = f.buf.Head()
	for _, e := range buffered {
		if !scope.keeps(e) {
			continue
		}
		evs = append(evs, e)
		if len(evs) == limit {
			through = e.Seq
			break
		}
	}
	return evs, through, true, moved
}

// movedFor is the channel the feed closes at the next events that scope keeps; the caller
// holds fs.mu.
func (f *Feed) movedFor(scope Scope) chan struct{} {
	switch {
	case f.stopped || scope.every():
		return f.moved
	case scope.Ticket != "":
		w, ok := f.ticketMoved[scope.Ticket]
		if !ok {
			if f.ticketMoved == nil {
				f.ticketMoved = make(map[string]*ticketWake)
			}
			w = &ticketWake{ch: make(chan struct{})}
			f.ticketMoved[scope.Ticket] = w
		}
		w.waiters++
		return w.ch
	default:
		ch, ok := f.ownerMoved[scope.Owner]
		if !ok {
			if f.ownerMoved == nil {
				f.ownerMoved = make(map[string]chan struct{})
			}
			ch = make(chan struct{})
			f.ownerMoved[scope.Owner] = ch
		}
		return ch
	}
}

// ticketWake is the channel of a ticket's next event, and how many streams wait on it.
type ticketWake struct {
	ch      chan struct{}
	waiters int
}

// Unwait gives back the channel since gave a stream of scope, once it no longer waits on it.
func (fs *Feeds) Unwait(f *Feed, scope Scope, moved <-chan struct{}) {
	if scope.Ticket == "" {
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if w, ok := f.ticketMoved[scope.Ticket]; ok && w.ch == moved {
		if w.waiters--; w.waiters == 0 {
			delete(f.ticketMoved, scope.Ticket)
		}
	}
}

// Settle is where a stream whose wait ran out asks next: the feed's head when moved (the
// channel since gave it, with through after) is still open, for no event of its scope came
// since; else after. A stream of one ticket, woken by nothing for minutes, would otherwise
// fall behind the buffer and read the store at its next wait.
func (fs *Feeds) Settle(f *Feed, after int64, moved <-chan struct{}) int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	select {
	case <-moved:
		return after
	default:
	}
	if f.stopped {
		return after
	}
	return max(after, f.buf.Head())
}

// Watched is how many tickets long-polls wait on in queue's feed, and Waiters how many
// long-polls and streams use it (0 without a feed): what the Service's tests wait on.
func (fs *Feeds) Watched(queue string) int {
	return fs.count(queue, func(f *Feed) int { return len(f.watch) })
}
func (fs *Feeds) Waiters(queue string) int {
	return fs.count(queue, func(f *Feed) int { return f.refs })
}

func (fs *Feeds) count(queue string, n func(*Feed) int) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.byQueue[queue]; ok {
		return n(f)
	}
	return 0
}
