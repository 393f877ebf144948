package queuedb

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// eventsChannel is the NOTIFY channel of queue events; the payload is the queue's name and its
// last event's Seq, "name seq". Every transaction that appends events notifies in the same
// transaction, so the notification is delivered at its COMMIT, to every listening session of
// the database.
const eventsChannel = "matchmaker_queue_events"

// pollInterval is how often waiters read the event numbers themselves while the listening
// connection is down, so that no wait hangs on a notification that will not come.
const pollInterval = 250 * time.Millisecond

// notifier fans the listener's notifications out to the waiters of this process. A
// notification wakes the queue's waiters that wait for an event it brings (after < its Seq):
// one that arrives late, for events a waiter has already read, wakes no one.
type notifier struct {
	mu      sync.Mutex
	waiters map[string]map[*waiter]struct{}
	up      bool // the listening connection is up
}

// waiter is one WaitEvents call; ch is closed to wake it.
type waiter struct {
	after int64
	ch    chan struct{}
}

func (n *notifier) init() {
	n.waiters = make(map[string]map[*waiter]struct{})
	n.up = true // the constructor's connection listens already
}

// subscribe registers a waiter for the queue's events after after, and says whether
// notifications are coming at all.
func (n *notifier) subscribe(queueName string, after int64) (*waiter, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := &waiter{after: after, ch: make(chan struct{})}
	ws, ok := n.waiters[queueName]
	if !ok {
		ws = make(map[*waiter]struct{})
		n.waiters[queueName] = ws
	}
	ws[w] = struct{}{}
	return w, n.up
}

// unsubscribe forgets a waiter that returned (woken or not).
func (n *notifier) unsubscribe(queueName string, w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ws, ok := n.waiters[queueName]; ok {
		delete(ws, w)
		if len(ws) == 0 {
			delete(n.waiters, queueName)
		}
	}
}

// notified wakes the waiters of a notification's queue that wait for events up to its Seq
// (all of the queue's if the payload cannot be read).
func (n *notifier) notified(payload string) {
	name, num, _ := strings.Cut(payload, " ")
	seq, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		seq = math.MaxInt64
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	ws := n.waiters[name]
	for w := range ws {
		if w.after < seq {
			close(w.ch)
			delete(ws, w)
		}
	}
	if len(ws) == 0 {
		delete(n.waiters, name)
	}
}

// wakeAll wakes every waiter, when notifications may have been missed or will stop coming.
func (n *notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ws := range n.waiters {
		for w := range ws {
			close(w.ch)
		}
	}
	clear(n.waiters)
}

func (n *notifier) isUp() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.up
}

func (n *notifier) setUp(up bool) {
	n.mu.Lock()
	n.up = up
	n.mu.Unlock()
}

// listen opens a listening connection.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, db.MapError(err, "queue: listening connection")
	}
	if _, err := conn.Exec(ctx, "LISTEN "+eventsChannel); err != nil {
		_ = conn.Close(context.Background())
		return nil, db.MapError(err, "queue: listen")
	}
	return conn, nil
}

// runListener delivers notifications to the waiters until the store closes. When the
// connection fails it wakes every waiter (they poll meanwhile) and connects again, backing
// off; once it is back it wakes them all again, since events may have come in between.
func (s *Store) runListener(conn *pgx.Conn) {
	backoff := time.Duration(0)
	for {
		if conn != nil {
			backoff = 0
			s.listenerPID.Store(conn.PgConn().PID())
			if !s.notify.isUp() { // a reconnection
				s.notify.setUp(true)
				s.notify.wakeAll()
			}
			for {
				n, err := conn.WaitForNotification(s.bg)
				if err != nil {
					break
				}
				s.notify.notified(n.Payload)
			}
			s.notify.setUp(false)
			s.notify.wakeAll()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(ctx)
			cancel()
			conn = nil
		}
		if s.bg.Err() != nil {
			return
		}
		backoff = min(max(2*backoff, minBackoff), maxBackoff)
		select {
		case <-s.bg.Done():
			return
		case <-time.After(backoff):
		}
		ctx, cancel := context.WithTimeout(s.bg, 10*time.Second)
		conn, _ = s.listen(ctx) // nil on failure: back off longer
		cancel()
	}
}

// WaitEvents implements queue.Store. It returns at once if the queue's last event is after
// after; otherwise at a notification of a later event (or, spuriously, when the listening
// connection goes down or comes back), or when ctx ends. While notifications are not coming
// it reads the queue's last event number every pollInterval.
func (s *Store) WaitEvents(ctx context.Context, queueName string, after int64) error {
	for {
		// Subscribe before reading, so that an event committed after the read wakes us.
		w, up := s.notify.subscribe(queueName, after)
		woken, err := s.waitOnce(ctx, queueName, after, w, up)
		s.notify.unsubscribe(queueName, w)
		if woken || err != nil {
			return err
		}
	}
}

// waitOnce reads the queue's last event number and waits for w, ctx or, when up is false,
// the next poll. It reports whether the wait is over.
func (s *Store) waitOnce(ctx context.Context, queueName string, after int64, w *waiter, up bool) (bool, error) {
	last, err := s.EventHead(ctx, queueName) // no queue: no events, yet
	switch {
	case ctx.Err() != nil:
		return true, ctx.Err()
	case err != nil && apperr.CodeOf(err) != apperr.NotFound:
		return true, err
	case last > after:
		return true, nil
	}
	var poll <-chan time.Time
	if !up {
		t := time.NewTimer(pollInterval)
		defer t.Stop()
		poll = t.C
	}
	select {
	case <-w.ch:
		return true, nil
	case <-poll:
		return false, nil
	case <-ctx.Done():
		return true, ctx.Err()
	}
}
