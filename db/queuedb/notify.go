package queuedb

import (
	"context"
	"math"
	"strconv"
	"strings"
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

// notified wakes the waiters of a notification's queue that wait for events up to its Seq
// (all of the queue's if the payload cannot be read).
func (s *Store) notified(payload string) {
	name, num, _ := strings.Cut(payload, " ")
	seq, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		seq = math.MaxInt64
	}
	s.waiters.Notify(name, seq)
}

// setListening records whether notifications are coming, and wakes every waiter: events may
// have come unnotified, or will come so (the waiters poll meanwhile).
func (s *Store) setListening(up bool) {
	s.listening.Store(up)
	s.waiters.WakeAll()
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
			if !s.listening.Load() { // a reconnection
				s.setListening(true)
			}
			for {
				n, err := conn.WaitForNotification(s.bg)
				if err != nil {
					break
				}
				s.notified(n.Payload)
			}
			s.setListening(false)
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
	head := func() (int64, error) {
		page, err := s.Events(ctx, queueName, after, 0, false)
		if apperr.CodeOf(err) == apperr.NotFound {
			return 0, nil // no queue: no events, yet
		}
		return page.Head, err
	}
	poll := func() <-chan time.Time {
		if s.listening.Load() {
			return nil
		}
		return time.After(pollInterval)
	}
	for {
		if woken, err := s.waiters.Wait(ctx, queueName, after, head, poll); woken || err != nil {
			return err
		}
	}
}
