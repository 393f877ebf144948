package db

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Leadership of a queue is a session advisory lock, pg_try_advisory_lock(3, key), held on one
// connection of this process's own, outside the pool: when the process dies, its session ends
// and the server releases every lock it held, and another replica takes each queue at its
// next Lead. (The first key is the lock's namespace: 2 is a game type's lock in the rating
// store, 3 a queue's leadership.)
//
// key is the queue name's 32-bit FNV-1a hash, the same in every process and version. Two
// queues whose names share a key share a lock: whichever process holds it leads both, and
// no other process leads either; each queue still has exactly one leader. The conditional
// match write, not the lock, is what keeps a player out of two matches.
const sqlTryLead = `SELECT pg_try_advisory_lock(3, $1)`

const sqlResign = `SELECT pg_advisory_unlock(3, $1)`

// sqlTakeEpoch counts the queue's leader epoch up as this process takes the queue (see the
// migration 00005); a queue not yet stored has none.
const sqlTakeEpoch = `UPDATE queues SET leader_epoch = leader_epoch + 1 WHERE name = $1 RETURNING leader_epoch`

// lostEpoch marks a queue whose leadership this process lost without resigning: its writes
// are refused until it leads the queue again.
const lostEpoch = -1

// leadTimeout bounds one round trip on the leadership connection. The caller's context does
// not cancel it: pgx closes a connection whose query is cancelled, and with it every lock the
// process holds.
const leadTimeout = 5 * time.Second

// Reconnection of the leadership connection backs off from minBackoff to maxBackoff.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// leader holds the leadership connection and the queues it leads, under mu (a pgx.Conn is
// not safe for concurrent use).
type leader struct {
	mu      sync.Mutex
	connCfg *pgx.ConnConfig
	conn    *pgx.Conn                 // nil while down
	held    map[int32]map[string]bool // lock key -> the queues led under it
	backoff time.Duration
	retryAt time.Time // no reconnection before

	// epochs is the leader epoch this process took for each queue it leads or led (lostEpoch
	// once the lock is gone); a queue it never led has none, and its writes are not fenced.
	// Under a mutex of its own: every tick's commit reads it, and mu is held across the
	// leadership connection's round trips (a ping of a frozen database: seconds).
	epochMu sync.Mutex
	epochs  map[string]int64
}

func (l *leader) setEpoch(queueName string, epoch int64) {
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	if l.epochs == nil {
		l.epochs = make(map[string]int64)
	}
	l.epochs[queueName] = epoch
}

func lockKey(queueName string) int32 {
	h := fnv.New32a()
	h.Write([]byte(queueName))
	return int32(h.Sum32())
}

// connect opens the connection. The caller holds mu, or is the constructor.
func (l *leader) connect(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.connCfg.Copy())
	if err != nil {
		l.backoff = min(max(2*l.backoff, minBackoff), maxBackoff)
		l.retryAt = time.Now().Add(l.backoff)
		return mapError(err, "queue: leadership connection")
	}
	l.conn, l.held, l.backoff = conn, make(map[int32]map[string]bool), 0
	return nil
}

// drop closes a connection that failed: the server has released, or will release, its locks.
func (l *leader) drop() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = l.conn.Close(ctx)
		cancel()
	}
	l.conn, l.held = nil, nil
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	for q := range l.epochs {
		l.epochs[q] = lostEpoch
	}
}

// take records that this process leads queueName under key from now on, with a new epoch.
// The caller holds mu and the lock.
func (l *leader) take(ctx context.Context, key int32, queueName string) error {
	var epoch int64
	err := l.conn.QueryRow(ctx, sqlTakeEpoch, queueName).Scan(&epoch)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if l.held[key] == nil {
		l.held[key] = make(map[string]bool)
	}
	l.held[key][queueName] = true
	l.setEpoch(queueName, epoch)
	return nil
}

// epoch is the epoch this process's writes to queueName must find: ok false when it never
// led the queue (its writes are not fenced).
func (l *leader) epoch(queueName string) (epoch int64, ok bool) {
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	epoch, ok = l.epochs[queueName]
	return epoch, ok
}

func (l *leader) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop()
}

// Lead implements queue.Store. It reports false, with an Unavailable error, while the
// leadership connection is down; a connection found dead (the ping of a held lock, or the
// try of a new one, fails) ends every leadership of this process at once, and the call tries
// to connect again, at most once per backoff interval.
func (s *QueueStore) Lead(ctx context.Context, queueName string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, mapError(err, "queue: lead")
	}
	l := &s.lead
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-s.stop: // Close closes the connection after this, under mu: do not open another
		return false, apperr.New(apperr.Unavailable, "queue: the store is closed")
	default:
	}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leadTimeout)
	defer cancel()
	key := lockKey(queueName)
	if queues, ok := l.held[key]; ok && l.conn != nil {
		err := l.conn.Ping(qctx)
		if err == nil && !queues[queueName] {
			err = l.take(qctx, key, queueName) // another queue's lock, this queue's first lead
		}
		if err == nil {
			return true, nil
		}
		l.drop()
	}
	if l.conn == nil {
		if time.Now().Before(l.retryAt) {
			return false, apperr.New(apperr.Unavailable, "queue: the leadership connection is down")
		}
		if err := l.connect(qctx); err != nil {
			return false, err
		}
	}
	var got bool
	if err := l.conn.QueryRow(qctx, sqlTryLead, key).Scan(&got); err != nil {
		l.drop()
		return false, mapError(err, "queue: lead")
	}
	if got {
		if err := l.take(qctx, key, queueName); err != nil {
			l.drop()
			return false, mapError(err, "queue: lead")
		}
	}
	return got, nil
}

// Resign implements queue.Store. The lock is released when no other queue of this process is
// led under the same key.
func (s *QueueStore) Resign(ctx context.Context, queueName string) error {
	l := &s.lead
	l.mu.Lock()
	defer l.mu.Unlock()
	key := lockKey(queueName)
	queues, ok := l.held[key]
	if !ok || !queues[queueName] {
		return nil
	}
	delete(queues, queueName)
	l.epochMu.Lock()
	delete(l.epochs, queueName)
	l.epochMu.Unlock()
	if len(queues) > 0 {
		return nil
	}
	delete(l.held, key)
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leadTimeout)
	defer cancel()
	if _, err := l.conn.Exec(qctx, sqlResign, key); err != nil {
		l.drop() // the lock goes with the connection
	}
	return nil
}

// fence is the epoch condition of a leader's write to queueName: nil (no condition) when this
// process never led the queue.
func (s *QueueStore) fence(queueName string) *int64 {
	if epoch, ok := s.lead.epoch(queueName); ok {
		return &epoch
	}
	return nil
}

// deposed is the error of a leader's write refused because another process leads the queue
// now.
func deposed(queueName string) error {
	return apperr.New(apperr.Conflict, "queue: this replica no longer leads queue %q: another one took it over", queueName)
}
