package queue

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// MemoryStore is the Store kept in the process: the default when no database is configured.
// The process is trivially the leader of every queue. Everything is lost when it exits.
//
// It is storage only: maps under one mutex, which makes every call atomic, and each queue's
// event log. What a change does to the tickets is the lifecycle's (memstore_changes.go).
// WaitEvents waiters are woken by closing a channel that is replaced at each new event.
type MemoryStore struct {
	mu        sync.Mutex
	queues    map[string]*memQueue
	tickets   map[string]*memTicket
	matches   map[string]Match
	proposals map[string]*Proposal
	version   uint64            // bumped at every ticket change: the Changes cursor
	wakeEvent chan struct{}     // closed and replaced when any event is appended
	stats     map[string][]byte // queue -> its latest stats, encoded (a copy by construction)
	waiters   map[string]int    // queue -> its WaitEvents calls under way
}

type memQueue struct {
	def       Queue
	deleted   bool
	events    []Event // Seq = index + 1 + dropped
	dropped   int64   // events purged from the front
	webhook   int64
	searching map[string]string // player id -> his live ticket (searching, proposed or placing)
	idem      map[string]string // idemKey(owner, idempotency key) -> ticket id
}

type memTicket struct {
	t       Ticket
	version uint64
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{queues: make(map[string]*memQueue), tickets: make(map[string]*memTicket),
		matches: make(map[string]Match), proposals: make(map[string]*Proposal), wakeEvent: make(chan struct{}),
		stats: make(map[string][]byte), waiters: make(map[string]int)}
}

func (s *MemoryStore) Name() string                   { return "memory" }
func (s *MemoryStore) Ping(ctx context.Context) error { return ctx.Err() }

// lock takes the mutex for a call that writes, unless ctx has ended (as a database would
// refuse it): Unavailable then.
func (s *MemoryStore) lock(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "queue store: "+op)
	}
	s.mu.Lock()
	return nil
}

// queueNamed is queue name, unless it was deleted and deleted is false (a deleted queue's
// events and tickets stay readable). The caller holds the lock.
func (s *MemoryStore) queueNamed(name string, deleted bool) (*memQueue, error) {
	if q, ok := s.queues[name]; ok && (deleted || !q.deleted) {
		return q, nil
	}
	return nil, apperr.New(apperr.NotFound, "no queue %q", name)
}

// onQueue runs fn on queue name (as queueNamed finds it) under the lock.
func (s *MemoryStore) onQueue(name string, deleted bool, fn func(q *memQueue)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueNamed(name, deleted)
	if err == nil {
		fn(q)
	}
	return err
}

func (s *MemoryStore) PutQueue(ctx context.Context, q Queue) (Queue, bool, error) {
	if err := s.lock(ctx, "put queue"); err != nil {
		return Queue{}, false, err
	}
	defer s.mu.Unlock()
	q = q.Clone()
	old, ok := s.queues[q.Name]
	if ok && !old.deleted {
		q.CreatedAt = old.def.CreatedAt
		old.def = q
		return q.Clone(), false, nil
	}
	mq := &memQueue{def: q, searching: make(map[string]string), idem: make(map[string]string)}
	if ok { // recreated after a delete: its events go on from where they were
		mq.events, mq.dropped, mq.webhook = old.events, old.dropped, old.webhook
	}
	s.queues[q.Name] = mq
	return q.Clone(), true, nil
}

func (s *MemoryStore) GetQueue(ctx context.Context, name string) (q Queue, err error) {
	return q, s.onQueue(name, false, func(mq *memQueue) { q = mq.def.Clone() })
}

func (s *MemoryStore) ListQueues(ctx context.Context) ([]Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Queue
	for _, q := range s.queues {
		if !q.deleted {
			out = append(out, q.def.Clone())
		}
	}
	slices.SortFunc(out, func(a, b Queue) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *MemoryStore) CreateTicket(ctx context.Context, t Ticket) (Ticket, bool, error) {
	if err := s.lock(ctx, "create ticket"); err != nil {
		return Ticket{}, false, err
	}
	defer s.mu.Unlock()
	q, err := s.queueNamed(t.Queue, false)
	if err != nil {
		return Ticket{}, false, err
	}
	if id, ok := q.idem[idemKey(t.Owner, t.IdempotencyKey)]; ok && t.IdempotencyKey != "" {
		old, err := Replay(s.tickets[id].t.Clone(), t)
		return old, err == nil, err
	}
	for _, p := range t.Players {
		if id, ok := q.searching[p.ID]; ok {
			return Ticket{}, false, ErrSearching(p.ID, id)
		}
	}
	if _, dup := s.tickets[t.ID]; dup {
		return Ticket{}, false, apperr.New(apperr.Conflict, "ticket %q exists", t.ID)
	}
	t = t.Clone()
	Start(&t)
	s.version++
	s.tickets[t.ID] = &memTicket{t: t, version: s.version}
	for _, p := range t.Players {
		q.searching[p.ID] = t.ID
	}
	if t.IdempotencyKey != "" {
		q.idem[idemKey(t.Owner, t.IdempotencyKey)] = t.ID
	}
	return t.Clone(), false, nil
}

// idemKey is where an idempotency key is kept: per API key (and queue, by the map it is in).
func idemKey(owner, key string) string { return owner + "\x00" + key }

func (s *MemoryStore) GetTicket(ctx context.Context, id string) (Ticket, error) {
	return get(s, s.tickets, id, "ticket", func(mt *memTicket) Ticket { return mt.t.Clone() })
}

// get is a copy (as clone makes it) of what m holds under id, NotFound naming what when it
// holds nothing.
func get[V, T any](s *MemoryStore, m map[string]V, id, what string, clone func(V) T) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := m[id]
	if !ok {
		var zero T
		return zero, apperr.New(apperr.NotFound, "no %s %q", what, id)
	}
	return clone(v), nil
}

func (s *MemoryStore) Changes(ctx context.Context, queue string, since Cursor) (out []Ticket, cur Cursor, err error) {
	err = s.onQueue(queue, true, func(*memQueue) {
		for _, mt := range s.tickets {
			if mt.t.Queue == queue && mt.version > uint64(since) && (since > 0 || mt.t.Status == Searching) {
				out = append(out, mt.t.Clone())
			}
		}
		cur = Cursor(s.version)
	})
	if err != nil {
		return nil, since, err
	}
	slices.SortFunc(out, func(a, b Ticket) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
	return out, cur, nil
}

func (s *MemoryStore) GetMatch(ctx context.Context, id string) (Match, error) {
	return get(s, s.matches, id, "match", Match.Clone)
}

// appendEvent numbers ev and wakes the waiters. The caller holds the lock.
func (s *MemoryStore) appendEvent(q *memQueue, ev Event) {
	ev.Seq = q.head() + 1
	q.events = append(q.events, ev)
	close(s.wakeEvent)
	s.wakeEvent = make(chan struct{})
}

// head is the Seq of the queue's last event.
func (q *memQueue) head() int64 { return q.dropped + int64(len(q.events)) }

func (s *MemoryStore) Events(ctx context.Context, queue string, after int64, limit int) (evs []Event, err error) {
	return evs, s.onQueue(queue, true, func(q *memQueue) { evs = s.events(q, after, limit) })
}

// events are up to limit of q's events after after, with their tickets' owners. The caller
// holds the lock.
func (s *MemoryStore) events(q *memQueue, after int64, limit int) []Event {
	start := max(0, after-q.dropped)
	if start >= int64(len(q.events)) {
		return nil
	}
	out := slices.Clone(q.events[start:min(int64(len(q.events)), start+int64(limit))])
	for i := range out {
		if t, ok := s.tickets[out[i].TicketID]; ok {
			out[i].Owner = t.t.Owner
		}
	}
	return out
}

func (s *MemoryStore) FeedEvents(ctx context.Context, queue string, after int64, limit int) (evs []Event, ts []Ticket, err error) {
	err = s.onQueue(queue, true, func(q *memQueue) {
		evs = s.events(q, after, limit)
		for i, e := range evs {
			if mt, ok := s.tickets[e.TicketID]; ok && !slices.ContainsFunc(evs[:i], func(o Event) bool { return o.TicketID == e.TicketID }) {
				ts = append(ts, mt.t.Clone())
			}
		}
	})
	return evs, ts, err
}

func (s *MemoryStore) EventHead(ctx context.Context, queue string) (head int64, err error) {
	return head, s.onQueue(queue, true, func(q *memQueue) { head = q.head() })
}

func (s *MemoryStore) WaitEvents(ctx context.Context, queue string, after int64) error {
	s.mu.Lock()
	q, ok := s.queues[queue]
	ready := ok && q.head() > after
	wake := s.wakeEvent
	s.waiters[queue]++
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.waiters[queue]--; s.mu.Unlock() }()
	if ready {
		return nil
	}
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Waiters is how many WaitEvents calls are under way on queue (the Postgres store's tests say
// the same of theirs).
func (s *MemoryStore) Waiters(queue string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters[queue]
}

func (s *MemoryStore) WebhookCursor(ctx context.Context, queue string) (seq int64, err error) {
	return seq, s.onQueue(queue, true, func(q *memQueue) { seq = q.webhook })
}

func (s *MemoryStore) SetWebhookCursor(ctx context.Context, queue string, seq int64) error {
	return s.onQueue(queue, true, func(q *memQueue) { q.webhook = max(q.webhook, seq) })
}

// Lead: the one process leads every queue.
func (s *MemoryStore) Lead(ctx context.Context, queue string) (bool, error) { return true, nil }
func (s *MemoryStore) Resign(ctx context.Context, queue string) error       { return nil }

func (s *MemoryStore) PublishStats(ctx context.Context, queue string, st Stats) error {
	b, err := EncodeStats(st)
	if err != nil {
		return err
	}
	return s.onQueue(queue, false, func(*memQueue) { s.stats[queue] = b })
}

func (s *MemoryStore) LatestStats(ctx context.Context, queue string) (Stats, bool, error) {
	var b []byte
	if s.onQueue(queue, false, func(*memQueue) { b = s.stats[queue] }) != nil || b == nil {
		return Stats{}, false, nil
	}
	st, err := DecodeStats(b)
	return st, err == nil, err
}

func (s *MemoryStore) Purge(ctx context.Context, before time.Time) (PurgeReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r PurgeReport
	maps.DeleteFunc(s.tickets, func(id string, mt *memTicket) bool {
		t := &mt.t
		if t.Status.Live() || !t.UpdatedAt.Before(before) {
			return false
		}
		if q := s.queues[t.Queue]; q != nil && q.idem[idemKey(t.Owner, t.IdempotencyKey)] == id {
			delete(q.idem, idemKey(t.Owner, t.IdempotencyKey))
		}
		r.Tickets++
		return true
	})
	maps.DeleteFunc(s.proposals, func(_ string, p *Proposal) bool {
		q := s.queues[p.Match.Queue]
		return p.Purgeable(before, q == nil || q.deleted)
	})
	maps.DeleteFunc(s.matches, func(_ string, m Match) bool {
		if m.CreatedAt.Before(before) {
			r.Matches++
			return true
		}
		return false
	})
	for name, q := range s.queues {
		n := 0
		for n < len(q.events) && q.events[n].At.Before(before) && (q.def.Webhook == nil || q.events[n].Seq <= q.webhook) {
			n++
		}
		q.events, q.dropped, r.Events = q.events[n:], q.dropped+int64(n), r.Events+n
		if q.deleted && len(q.events) == 0 {
			delete(s.queues, name)
		}
	}
	return r, nil
}
