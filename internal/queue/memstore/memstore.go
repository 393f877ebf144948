// Package memstore holds the queue.Store kept in the process (the default without a
// database): storage only, every change decided by the queue's lifecycle.
package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/wakeup"
)

// Store is the queue.Store kept in the process: the default when no database is configured.
// The process is trivially the leader of every queue. Everything is lost when it exits.
//
// It is storage only: maps under one mutex, which makes every call atomic, and each queue's
// event log. What a change does to the tickets is the lifecycle's (changes.go).
type Store struct {
	mu        sync.Mutex
	queues    map[string]*memQueue
	tickets   map[string]*memTicket
	matches   map[string]queue.Match
	proposals map[string]*queue.Proposal
	version   uint64                               // bumped at every ticket change: the Changes cursor
	waiters   wakeup.Waiters                       // WaitEvents' calls, woken as events are appended
	standing  map[string]map[string]queue.Standing // player -> context -> his standing there
	claims    map[string]queue.Claim               // player -> his claim (claims.go)
}

type memQueue struct {
	def       queue.Queue
	deleted   bool
	events    queue.EventLog // numbered from 1, purged from the front
	webhook   int64
	searching map[string]string // player id -> his live ticket (searching, proposed or placing)
	idem      map[string]string // idemKey(owner, idempotency key) -> ticket id
	// stats are the latest stats of the queue ("") and of each of its partitions, encoded (a
	// copy by construction).
	stats map[string][]byte
}

type memTicket struct {
	t       queue.Ticket
	version uint64
}

var _ queue.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{queues: make(map[string]*memQueue), tickets: make(map[string]*memTicket),
		matches: make(map[string]queue.Match), proposals: make(map[string]*queue.Proposal), claims: make(map[string]queue.Claim),
		standing: make(map[string]map[string]queue.Standing)}
}

func (s *Store) Name() string                   { return "memory" }
func (s *Store) Ping(ctx context.Context) error { return ctx.Err() }

// lock takes the mutex for a call that writes, unless ctx has ended (as a database would
// refuse it): Unavailable then.
func (s *Store) lock(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "queue store: "+op)
	}
	s.mu.Lock()
	return nil
}

// queueNamed is queue name, unless it was deleted and deleted is false (a deleted queue's
// events and tickets stay readable). The caller holds the lock.
func (s *Store) queueNamed(name string, deleted bool) (*memQueue, error) {
	if q, ok := s.queues[name]; ok && (deleted || !q.deleted) {
		return q, nil
	}
	return nil, apperr.New(apperr.NotFound, "no queue %q", name)
}

// onQueue runs fn on queue name (as queueNamed finds it) under the lock.
func (s *Store) onQueue(name string, deleted bool, fn func(q *memQueue)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueNamed(name, deleted)
	if err == nil {
		fn(q)
	}
	return err
}

func (s *Store) PutQueue(ctx context.Context, q queue.Queue) (queue.Queue, bool, error) {
	if err := s.lock(ctx, "put queue"); err != nil {
		return queue.Queue{}, false, err
	}
	defer s.mu.Unlock()
	q = q.Clone()
	old, ok := s.queues[q.Name]
	if ok && !old.deleted {
		q.CreatedAt = old.def.CreatedAt
		old.def = q
		return q.Clone(), false, nil
	}
	mq := &memQueue{def: q, searching: make(map[string]string), idem: make(map[string]string), stats: make(map[string][]byte)}
	if ok { // recreated after a delete: its events go on from where they were, its stats stay
		mq.events, mq.webhook, mq.stats = old.events, old.webhook, old.stats
	}
	s.queues[q.Name] = mq
	return q.Clone(), true, nil
}

func (s *Store) GetQueue(ctx context.Context, name string) (q queue.Queue, err error) {
	return q, s.onQueue(name, false, func(mq *memQueue) { q = mq.def.Clone() })
}

func (s *Store) ListQueues(ctx context.Context) ([]queue.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []queue.Queue
	for _, name := range slices.Sorted(maps.Keys(s.queues)) {
		if q := s.queues[name]; !q.deleted {
			out = append(out, q.def.Clone())
		}
	}
	return out, nil
}

func (s *Store) CreateTicket(ctx context.Context, t queue.Ticket) (queue.Ticket, bool, error) {
	if err := s.lock(ctx, "create ticket"); err != nil {
		return queue.Ticket{}, false, err
	}
	defer s.mu.Unlock()
	q, err := s.queueNamed(t.Queue, false)
	if err != nil {
		return queue.Ticket{}, false, err
	}
	if id, ok := q.idem[idemKey(t.Owner, t.IdempotencyKey)]; ok && t.IdempotencyKey != "" {
		old, err := queue.Replay(s.tickets[id].t.Clone(), t)
		return old, err == nil, err
	}
	for _, p := range t.Players {
		if id, ok := q.searching[p.ID]; ok {
			return queue.Ticket{}, false, queue.ErrSearching(p.ID, id)
		}
	}
	if _, dup := s.tickets[t.ID]; dup {
		return queue.Ticket{}, false, apperr.New(apperr.Conflict, "ticket %q exists", t.ID)
	}
	t = t.Clone()
	queue.Start(&t)
	s.version++
	s.tickets[t.ID] = &memTicket{t: t, version: s.version}
	for _, p := range t.Players {
		q.searching[p.ID] = t.ID
	}
	if t.IdempotencyKey != "" {
		q.idem[idemKey(t.Owner, t.IdempotencyKey)] = t.ID
	}
	if t.Exclusive {
		// Stored searching; the lifecycle cancels it at once if a player's claim is live.
		if err := s.created(&t); err != nil {
			return queue.Ticket{}, false, err
		}
	}
	return s.tickets[t.ID].t.Clone(), false, nil
}

// idemKey is where an idempotency key is kept: per API key (and queue, by the map it is in).
func idemKey(owner, key string) string { return owner + "\x00" + key }

func (s *Store) GetTicket(ctx context.Context, id string) (queue.Ticket, error) {
	return get(s, s.tickets, id, "ticket", func(mt *memTicket) queue.Ticket { return mt.t.Clone() })
}

// get is a copy (as clone makes it) of what m holds under id, NotFound naming what when it
// holds nothing.
func get[V, T any](s *Store, m map[string]V, id, what string, clone func(V) T) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := m[id]
	if !ok {
		var zero T
		return zero, apperr.New(apperr.NotFound, "no %s %q", what, id)
	}
	return clone(v), nil
}

// Changes implements queue.LeaderStore: the other partitions' tickets are neither cloned nor
// returned.
func (s *Store) Changes(ctx context.Context, q queue.Queue, part string, since queue.Cursor) (out []queue.Ticket, cur queue.Cursor, err error) {
	err = s.onQueue(q.Name, true, func(*memQueue) {
		// Sorted as pointers, then cloned in order: a sort of the clones moved whole tickets
		// (with their write barriers) and was 13% of a tick whose pool had all turned over
		// (docs/performance.md, "Match functions").
		var changed []*queue.Ticket
		for _, mt := range s.tickets {
			t := &mt.t
			if t.Queue == q.Name && mt.version > uint64(since) && (since > 0 || t.Status == queue.Searching) &&
				(part == "" || q.PartitionOf(t.Attributes) == part) {
				changed = append(changed, t)
			}
		}
		slices.SortFunc(changed, func(a, b *queue.Ticket) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
		if len(changed) > 0 {
			out = make([]queue.Ticket, len(changed))
		}
		for i, t := range changed {
			out[i] = t.Clone()
		}
		cur = queue.Cursor(s.version)
	})
	if err != nil {
		return nil, since, err
	}
	return out, cur, nil
}

func (s *Store) GetMatch(ctx context.Context, id string) (queue.Match, error) {
	return get(s, s.matches, id, "match", queue.Match.Clone)
}

func (s *Store) MatchConnection(ctx context.Context, id string) (json.RawMessage, error) {
	return get(s, s.matches, id, "match", func(m queue.Match) json.RawMessage { return slices.Clone(m.Connection) })
}

// appendEvent numbers ev and wakes the waiters. The caller holds the lock.
func (s *Store) appendEvent(q *memQueue, ev queue.Event) {
	ev.Seq = q.events.Head() + 1
	q.events.Append(ev)
	s.waiters.Notify(q.def.Name, ev.Seq)
}

func (s *Store) Events(ctx context.Context, qname string, after int64, limit int, tickets bool) (out queue.EventPage, err error) {
	return out, s.onQueue(qname, true, func(q *memQueue) {
		kept, _ := q.events.After(after)
		out.Events, out.Head = append([]queue.Event(nil), kept[:min(len(kept), limit)]...), q.events.Head()
		for i, e := range out.Events {
			mt, ok := s.tickets[e.TicketID]
			if !ok {
				continue
			}
			out.Events[i].Owner = mt.t.Owner
			if tickets && !slices.ContainsFunc(out.Events[:i], func(o queue.Event) bool { return o.TicketID == e.TicketID }) {
				out.Tickets = append(out.Tickets, mt.t.Clone())
			}
		}
	})
}

func (s *Store) WaitEvents(ctx context.Context, qname string, after int64) error {
	_, err := s.waiters.Wait(ctx, qname, after, func() (int64, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if q, ok := s.queues[qname]; ok {
			return q.events.Head(), nil
		}
		return 0, nil // no queue: no events, yet
	}, nil)
	return err
}

// Waiters is how many WaitEvents calls wait for queue's events (the Postgres store's tests say
// the same of theirs).
func (s *Store) Waiters(qname string) int { return s.waiters.Len(qname) }

func (s *Store) WebhookCursor(ctx context.Context, qname string) (seq int64, err error) {
	return seq, s.onQueue(qname, true, func(q *memQueue) { seq = q.webhook })
}

func (s *Store) SetWebhookCursor(ctx context.Context, qname string, seq int64) error {
	return s.onQueue(qname, true, func(q *memQueue) { q.webhook = max(q.webhook, seq) })
}

// Lead: the one process leads every queue.
func (s *Store) Lead(ctx context.Context, qname string) (bool, error) { return true, nil }
func (s *Store) Resign(ctx context.Context, qname string) error       { return nil }

func (s *Store) PublishStats(ctx context.Context, qname string, st queue.Stats) error {
	b, err := queue.EncodeStats(st)
	if err != nil {
		return err
	}
	return s.onQueue(qname, false, func(q *memQueue) { q.stats[st.Partition] = b })
}

func (s *Store) PublishedStats(ctx context.Context, qname string) (out []queue.Stats, err error) {
	read := func(q *memQueue) { out, err = queue.DecodePublished(slices.Collect(maps.Values(q.stats))) }
	if s.onQueue(qname, false, read) != nil {
		return nil, nil // a queue gone: no stats
	}
	return out, err
}

// Purge deletes what queue/keeping.go says a purge deletes. A deleted queue stays, events
// gone, so that its events' numbers go on if it is defined again.
func (s *Store) Purge(ctx context.Context, before time.Time) (queue.PurgeReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r queue.PurgeReport
	maps.DeleteFunc(s.claims, func(_ string, c queue.Claim) bool { return c.Purgeable(before) })
	maps.DeleteFunc(s.tickets, func(id string, mt *memTicket) bool {
		t := &mt.t
		if !t.Purgeable(before) {
			return false
		}
		if q := s.queues[t.Queue]; q != nil && q.idem[idemKey(t.Owner, t.IdempotencyKey)] == id {
			delete(q.idem, idemKey(t.Owner, t.IdempotencyKey))
		}
		r.Tickets++
		return true
	})
	maps.DeleteFunc(s.proposals, func(_ string, p *queue.Proposal) bool {
		q := s.queues[p.Match.Queue]
		return p.Purgeable(before, q == nil || q.deleted)
	})
	r.Matches = len(s.matches)
	maps.DeleteFunc(s.matches, func(_ string, m queue.Match) bool { return m.Purgeable(before) })
	r.Matches -= len(s.matches)
	for _, q := range s.queues {
		n := queue.EventsPurgeable(q.events.Kept(), before, &q.def, q.deleted, q.webhook)
		q.events.Drop(n)
		r.Events += n
	}
	return r, nil
}
