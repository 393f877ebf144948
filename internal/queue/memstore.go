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
// One mutex guards it; WaitEvents waiters are woken by closing a channel that is replaced at
// each new event.
type MemoryStore struct {
	mu        sync.Mutex
	queues    map[string]*memQueue
	tickets   map[string]*memTicket
	matches   map[string]Match
	version   uint64 // bumped at every ticket change: the Changes cursor
	resigned  map[string]bool
	wakeEvent chan struct{}     // closed and replaced when any event is appended
	stats     map[string][]byte // queue -> its latest stats, encoded (a copy by construction)
	proposals map[string]*Proposal
}

type memQueue struct {
	def       Queue
	deleted   bool
	events    []Event // Seq = index + 1 + dropped
	dropped   int64   // events purged from the front
	webhook   int64
	searching map[string]string // player id -> ticket id
	idem      map[string]string // idemKey(owner, idempotency key) -> ticket id
}

type memTicket struct {
	t       Ticket
	version uint64
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		queues:    make(map[string]*memQueue),
		tickets:   make(map[string]*memTicket),
		matches:   make(map[string]Match),
		resigned:  make(map[string]bool),
		wakeEvent: make(chan struct{}),
		stats:     make(map[string][]byte),
		proposals: make(map[string]*Proposal),
	}
}

func (s *MemoryStore) PublishStats(ctx context.Context, queue string, st Stats) error {
	b, err := EncodeStats(st)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.queue(queue); err != nil {
		return err
	}
	s.stats[queue] = b
	return nil
}

func (s *MemoryStore) LatestStats(ctx context.Context, queue string) (Stats, bool, error) {
	s.mu.Lock()
	b, ok := s.stats[queue]
	_, err := s.queue(queue)
	s.mu.Unlock()
	if !ok || err != nil {
		return Stats{}, false, nil
	}
	st, err := DecodeStats(b)
	return st, err == nil, err
}

func (s *MemoryStore) Name() string                   { return "memory" }
func (s *MemoryStore) Ping(ctx context.Context) error { return ctx.Err() }

func (s *MemoryStore) queue(name string) (*memQueue, error) {
	q, ok := s.queues[name]
	if !ok || q.deleted {
		return nil, apperr.New(apperr.NotFound, "no queue %q", name)
	}
	return q, nil
}

func (s *MemoryStore) PutQueue(ctx context.Context, q Queue) (Queue, bool, error) {
	if err := ctx.Err(); err != nil {
		return Queue{}, false, apperr.Wrap(apperr.Unavailable, err, "queue store: put queue")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q = cloneQueue(q)
	old, ok := s.queues[q.Name]
	if ok && !old.deleted {
		q.CreatedAt = old.def.CreatedAt
		old.def = q
		return cloneQueue(q), false, nil
	}
	mq := &memQueue{def: q, searching: make(map[string]string), idem: make(map[string]string)}
	if ok { // recreated after a delete: its events go on from where they were
		mq.events, mq.dropped, mq.webhook = old.events, old.dropped, old.webhook
	}
	s.queues[q.Name] = mq
	return cloneQueue(q), true, nil
}

func (s *MemoryStore) GetQueue(ctx context.Context, name string) (Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queue(name)
	if err != nil {
		return Queue{}, err
	}
	return cloneQueue(q.def), nil
}

func (s *MemoryStore) ListQueues(ctx context.Context) ([]Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Queue
	for _, q := range s.queues {
		if !q.deleted {
			out = append(out, cloneQueue(q.def))
		}
	}
	slices.SortFunc(out, func(a, b Queue) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *MemoryStore) DeleteQueue(ctx context.Context, name string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queue(name)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(q.searching))
	for _, id := range q.searching {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids) // a party's players share a ticket
	for _, id := range ids {
		s.finish(q, s.tickets[id], Cancelled, "queue deleted", at, nil)
	}
	q.deleted = true
	return nil
}

func (s *MemoryStore) CreateTicket(ctx context.Context, t Ticket) (Ticket, bool, error) {
	if err := ctx.Err(); err != nil {
		return Ticket{}, false, apperr.Wrap(apperr.Unavailable, err, "queue store: create ticket")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queue(t.Queue)
	if err != nil {
		return Ticket{}, false, err
	}
	if t.IdempotencyKey != "" {
		if id, ok := q.idem[idemKey(t.Owner, t.IdempotencyKey)]; ok {
			old := s.tickets[id].t
			if old.BodyHash != t.BodyHash {
				return Ticket{}, false, apperr.New(apperr.Conflict,
					"the Idempotency-Key %q was used for another ticket body", t.IdempotencyKey)
			}
			return cloneTicket(old), true, nil
		}
	}
	for _, p := range t.Players {
		if id, ok := q.searching[p.ID]; ok {
			return Ticket{}, false, ErrSearching(p.ID, id)
		}
	}
	if _, dup := s.tickets[t.ID]; dup {
		return Ticket{}, false, apperr.New(apperr.Conflict, "ticket %q exists", t.ID)
	}
	t = cloneTicket(t)
	t.Status, t.UpdatedAt = Searching, t.CreatedAt
	s.version++
	s.tickets[t.ID] = &memTicket{t: t, version: s.version}
	for _, p := range t.Players {
		q.searching[p.ID] = t.ID
	}
	if t.IdempotencyKey != "" {
		q.idem[idemKey(t.Owner, t.IdempotencyKey)] = t.ID
	}
	return cloneTicket(t), false, nil
}

func (s *MemoryStore) GetTicket(ctx context.Context, id string) (Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mt, ok := s.tickets[id]
	if !ok {
		return Ticket{}, apperr.New(apperr.NotFound, "no ticket %q", id)
	}
	return cloneTicket(mt.t), nil
}

// ticketsOf is the tickets of ids that exist.
func (s *MemoryStore) ticketsOf(ids []string) []Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Ticket, 0, len(ids))
	for _, id := range ids {
		if mt, ok := s.tickets[id]; ok {
			out = append(out, cloneTicket(mt.t))
		}
	}
	return out
}

func (s *MemoryStore) CancelTicket(ctx context.Context, id string, at time.Time) (Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mt, ok := s.tickets[id]
	if !ok {
		return Ticket{}, apperr.New(apperr.NotFound, "no ticket %q", id)
	}
	switch mt.t.Status {
	case Cancelled:
		return cloneTicket(mt.t), nil
	case Searching:
		s.finish(s.queues[mt.t.Queue], mt, Cancelled, "cancelled", at, nil)
		return cloneTicket(mt.t), nil
	case Proposed:
		p := s.proposals[mt.t.Proposal.MatchID]
		o, _ := p.Outcome(false, id)
		s.resolve(p, o, at, nil)
		return cloneTicket(mt.t), nil
	default:
		return Ticket{}, apperr.New(apperr.Conflict, "ticket %q is %s: only a searching ticket can be cancelled", id, mt.t.Status)
	}
}

// finish moves a searching ticket to a final status and appends its event. The caller holds
// the lock.
func (s *MemoryStore) finish(q *memQueue, mt *memTicket, status Status, reason string, at time.Time, a *Assignment) {
	t := &mt.t
	for _, p := range t.Players {
		if q.searching[p.ID] == t.ID {
			delete(q.searching, p.ID)
		}
	}
	t.Status, t.UpdatedAt, t.Proposal = status, at, nil
	ev := Event{Queue: t.Queue, TicketID: t.ID, At: at}
	switch status {
	case Matched:
		t.Assignment = a
		ev.Type, ev.MatchID, ev.Team = EventMatched, a.MatchID, a.Team
	case Expired:
		t.Reason = reason
		ev.Type, ev.Reason = EventExpired, reason
	case Cancelled:
		t.Reason = reason
		ev.Type, ev.Reason = EventCancelled, reason
	}
	s.version++
	mt.version = s.version
	s.appendEvent(q, ev)
}

// appendEvent numbers ev and wakes the waiters. The caller holds the lock.
func (s *MemoryStore) appendEvent(q *memQueue, ev Event) {
	ev.Seq = q.dropped + int64(len(q.events)) + 1
	q.events = append(q.events, ev)
	close(s.wakeEvent)
	s.wakeEvent = make(chan struct{})
}

// idemKey is where an idempotency key is kept: per API key (and queue, by the map it is in).
func idemKey(owner, key string) string { return owner + "\x00" + key }

func (s *MemoryStore) Changes(ctx context.Context, queue string, since Cursor) ([]Ticket, Cursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[queue]; !ok {
		return nil, since, apperr.New(apperr.NotFound, "no queue %q", queue)
	}
	var out []Ticket
	for _, mt := range s.tickets {
		if mt.t.Queue != queue || mt.version <= uint64(since) || since == 0 && mt.t.Status != Searching {
			continue
		}
		out = append(out, cloneTicket(mt.t))
	}
	slices.SortFunc(out, func(a, b Ticket) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, Cursor(s.version), nil
}

func (s *MemoryStore) CommitTick(ctx context.Context, queue string, w TickWrite) (TickCommitted, error) {
	if err := ctx.Err(); err != nil {
		return TickCommitted{}, apperr.Wrap(apperr.Unavailable, err, "queue store: commit tick")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return TickCommitted{}, apperr.New(apperr.NotFound, "no queue %q", queue)
	}
	var done TickCommitted
	for _, m := range w.Matches {
		ids := m.Tickets()
		live := len(ids) > 0
		for _, id := range ids {
			mt, ok := s.tickets[id]
			live = live && ok && mt.t.Queue == queue && mt.t.Status == Searching
		}
		if !live {
			done.Dropped = append(done.Dropped, m.ID)
			continue
		}
		m = cloneMatch(m)
		m.Queue = queue
		s.matches[m.ID] = m
		assigned := Assignments(m)
		for _, id := range ids {
			a := assigned[id]
			s.finish(q, s.tickets[id], Matched, "", w.At, &a)
		}
		done.Matches = append(done.Matches, m.ID)
	}
	for _, e := range w.Expired {
		mt, ok := s.tickets[e.TicketID]
		if !ok || mt.t.Queue != queue || mt.t.Status != Searching {
			continue
		}
		s.finish(q, mt, Expired, e.Reason, w.At, nil)
		done.Expired = append(done.Expired, e.TicketID)
	}
	return done, nil
}

func (s *MemoryStore) GetMatch(ctx context.Context, id string) (Match, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.matches[id]
	if !ok {
		return Match{}, apperr.New(apperr.NotFound, "no match %q", id)
	}
	return cloneMatch(m), nil
}

func (s *MemoryStore) Events(ctx context.Context, queue string, after int64, limit int) ([]Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return nil, apperr.New(apperr.NotFound, "no queue %q", queue)
	}
	start := max(0, after-q.dropped)
	if start >= int64(len(q.events)) {
		return nil, nil
	}
	end := min(int64(len(q.events)), start+int64(limit))
	out := slices.Clone(q.events[start:end])
	for i := range out {
		if t, ok := s.tickets[out[i].TicketID]; ok {
			out[i].Owner = t.t.Owner
		}
	}
	return out, nil
}

func (s *MemoryStore) FeedEvents(ctx context.Context, queue string, after int64, limit int) ([]Event, []Ticket, error) {
	evs, err := s.Events(ctx, queue, after, limit)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, 0, len(evs))
	for _, e := range evs {
		if !slices.Contains(ids, e.TicketID) {
			ids = append(ids, e.TicketID)
		}
	}
	return evs, s.ticketsOf(ids), nil
}

func (s *MemoryStore) EventHead(ctx context.Context, queue string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return 0, apperr.New(apperr.NotFound, "no queue %q", queue)
	}
	return q.dropped + int64(len(q.events)), nil
}

func (s *MemoryStore) WaitEvents(ctx context.Context, queue string, after int64) error {
	s.mu.Lock()
	q, ok := s.queues[queue]
	if ok && q.dropped+int64(len(q.events)) > after {
		s.mu.Unlock()
		return nil
	}
	wake := s.wakeEvent
	s.mu.Unlock()
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *MemoryStore) WebhookCursor(ctx context.Context, queue string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return 0, apperr.New(apperr.NotFound, "no queue %q", queue)
	}
	return q.webhook, nil
}

func (s *MemoryStore) SetWebhookCursor(ctx context.Context, queue string, seq int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return apperr.New(apperr.NotFound, "no queue %q", queue)
	}
	q.webhook = max(q.webhook, seq)
	return nil
}

// Lead: the one process leads every queue it has not resigned.
func (s *MemoryStore) Lead(ctx context.Context, queue string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.resigned, queue)
	return true, nil
}

func (s *MemoryStore) Resign(ctx context.Context, queue string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resigned[queue] = true
	return nil
}

func (s *MemoryStore) Purge(ctx context.Context, before time.Time) (PurgeReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r PurgeReport
	for id, mt := range s.tickets {
		if mt.t.Status != Searching && mt.t.Status != Proposed && mt.t.Status != Placing && mt.t.UpdatedAt.Before(before) {
			if q := s.queues[mt.t.Queue]; q != nil && q.idem[idemKey(mt.t.Owner, mt.t.IdempotencyKey)] == id {
				delete(q.idem, idemKey(mt.t.Owner, mt.t.IdempotencyKey))
			}
			delete(s.tickets, id)
			r.Tickets++
		}
	}
	for id, p := range s.proposals {
		if q := s.queues[p.Match.Queue]; p.State != ProposalOpen && p.State != ProposalPlacing && p.ResolvedAt.Before(before) ||
			p.AcceptBy.Before(before) && (q == nil || q.deleted) {
			delete(s.proposals, id)
		}
	}
	for id, m := range s.matches {
		if m.CreatedAt.Before(before) {
			delete(s.matches, id)
			r.Matches++
		}
	}
	for name, q := range s.queues {
		n := 0
		for ; n < len(q.events); n++ {
			e := q.events[n]
			if !e.At.Before(before) || q.def.Webhook != nil && e.Seq > q.webhook {
				break
			}
		}
		q.events = q.events[n:]
		q.dropped += int64(n)
		r.Events += n
		if q.deleted && len(q.events) == 0 {
			delete(s.queues, name)
		}
	}
	return r, nil
}

func cloneQueue(q Queue) Queue {
	q.Mutators = slices.Clone(q.Mutators)
	q.Regions = slices.Clone(q.Regions)
	q.Expansions.Interval = slices.Clone(q.Expansions.Interval)
	q.Expansions.MaxLatencyMS = slices.Clone(q.Expansions.MaxLatencyMS)
	q.Attributes = maps.Clone(q.Attributes)
	q.Rules = slices.Clone(q.Rules)
	cloneShape(&q)
	if q.Webhook != nil {
		w := *q.Webhook
		q.Webhook = &w
	}
	return q
}

func cloneTicket(t Ticket) Ticket {
	t.Players = slices.Clone(t.Players)
	for i := range t.Players {
		t.Players[i].Roles = slices.Clone(t.Players[i].Roles)
	}
	if t.Latencies != nil {
		l := make(map[string]float64, len(t.Latencies))
		for k, v := range t.Latencies {
			l[k] = v
		}
		t.Latencies = l
	}
	t.Attributes = cloneAttributes(t.Attributes)
	if t.Assignment != nil {
		a := *t.Assignment
		a.Teams = slices.Clone(a.Teams)
		for i := range a.Teams {
			a.Teams[i] = slices.Clone(a.Teams[i])
		}
		a.Connection = slices.Clone(a.Connection)
		a.Joined = slices.Clone(a.Joined)
		for i := range a.Joined {
			a.Joined[i] = slices.Clone(a.Joined[i])
		}
		a.TeamNames, a.Roles, a.OpenSlots = slices.Clone(a.TeamNames), maps.Clone(a.Roles), slices.Clone(a.OpenSlots)
		t.Assignment = &a
	}
	if p := t.Proposal; p != nil {
		c := *p
		c.Attributes = slices.Clone(p.Attributes)
		c.Teams = slices.Clone(p.Teams)
		for i := range c.Teams {
			c.Teams[i] = slices.Clone(c.Teams[i])
		}
		t.Proposal = &c
	}
	if b := t.Backfill; b != nil {
		c := *b
		c.Teams = slices.Clone(b.Teams)
		for i := range c.Teams {
			c.Teams[i].Players = slices.Clone(c.Teams[i].Players)
			c.Teams[i].Bots = slices.Clone(c.Teams[i].Bots)
		}
		c.OpenSlots = slices.Clone(b.OpenSlots)
		if b.Bots != nil {
			r := *b.Bots
			c.Bots = &r
		}
		t.Backfill = &c
	}
	return t
}

func cloneMatch(m Match) Match {
	m.Teams = slices.Clone(m.Teams)
	for i := range m.Teams {
		m.Teams[i].Players = slices.Clone(m.Teams[i].Players)
		m.Teams[i].Roles = slices.Clone(m.Teams[i].Roles)
	}
	m.Pairs = slices.Clone(m.Pairs)
	m.Attributes = slices.Clone(m.Attributes)
	m.Connection = slices.Clone(m.Connection)
	return m
}
