package db

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// eventsChannel is the NOTIFY channel of queue events; the payload is the queue's name. Every
// transaction that appends events notifies in the same transaction, so the notification is
// delivered at its COMMIT, to every listening session of the database.
const eventsChannel = "matchmaker_queue_events"

// pollInterval is how often waiters read the event numbers themselves while the listening
// connection is down, so that no wait hangs on a notification that will not come.
const pollInterval = 250 * time.Millisecond

// notifier fans the listener's notifications out to the waiters of this process: each queue
// that has waiters has a channel, closed (and forgotten) at the queue's next notification.
type notifier struct {
	mu      sync.Mutex
	waiters map[string]chan struct{}
	up      bool // the listening connection is up
}

func (n *notifier) init() { n.waiters = make(map[string]chan struct{}) }

// subscribe returns the channel closed at the queue's next notification, and whether
// notifications are coming at all.
func (n *notifier) subscribe(queueName string) (<-chan struct{}, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.waiters[queueName]
	if !ok {
		ch = make(chan struct{})
		n.waiters[queueName] = ch
	}
	return ch, n.up
}

func (n *notifier) wake(queueName string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.waiters[queueName]; ok {
		close(ch)
		delete(n.waiters, queueName)
	}
}

// wakeAll wakes every waiter, when notifications may have been missed or will stop coming.
func (n *notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for q, ch := range n.waiters {
		close(ch)
		delete(n.waiters, q)
	}
}

func (n *notifier) setUp(up bool) {
	n.mu.Lock()
	n.up = up
	n.mu.Unlock()
}

// listen opens a listening connection.
func (s *QueueStore) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, mapError(err, "queue: listening connection")
	}
	if _, err := conn.Exec(ctx, "LISTEN "+eventsChannel); err != nil {
		_ = conn.Close(context.Background())
		return nil, mapError(err, "queue: listen")
	}
	return conn, nil
}

// runListener delivers notifications to the waiters until the store closes. When the
// connection fails it wakes every waiter (they poll meanwhile) and connects again, backing
// off; once it is back it wakes them all again, since events may have come in between.
func (s *QueueStore) runListener(conn *pgx.Conn) {
	backoff := time.Duration(0)
	for {
		if conn != nil {
			backoff = 0
			s.notify.setUp(true)
			s.notify.wakeAll()
			for {
				n, err := conn.WaitForNotification(s.bg)
				if err != nil {
					break
				}
				s.notify.wake(n.Payload)
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
// after; otherwise at the queue's next notification (a spurious wake-up when the listening
// connection went down or came back), or when ctx ends. While notifications are not coming
// it reads the queue's last event number every pollInterval.
func (s *QueueStore) WaitEvents(ctx context.Context, queueName string, after int64) error {
	for {
		// Subscribe before reading, so that an event committed after the read wakes us.
		wake, up := s.notify.subscribe(queueName)
		var last int64
		err := s.pool.QueryRow(ctx, `SELECT event_seq FROM queues WHERE name = $1`, queueName).Scan(&last)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return mapError(err, "queue: wait events")
		}
		if last > after {
			return nil
		}
		if !up {
			t := time.NewTimer(pollInterval)
			select {
			case <-wake:
				t.Stop()
				return nil
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		select {
		case <-wake:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
