package queuedb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
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
//
// A lock alone never changes hands while its session lives, and a hung process (a stuck
// goroutine, SIGSTOP, a GC storm) keeps its socket, and so its session, open. So each queue's
// leader also holds a lease (migration 00010): its Lead calls renew queues.leader_renewed_at,
// on the database's clock, every quarter of the lease; a replica that cannot take the lock and
// finds the lease older than the whole lease ends the session holding the lock
// (pg_terminate_backend), takes the lock and a new epoch. The leader, on its own clock, stops
// leading a queue three quarters of a lease after it sent its last renewal that succeeded:
// before anyone else may break it, as long as the clocks run at one rate and a statement
// reaches the server within a quarter of the lease.
const sqlTryLead = `SELECT pg_try_advisory_lock(3, $1)`

const sqlResign = `SELECT pg_advisory_unlock(3, $1)`

// sqlTakeEpoch counts the queue's leader epoch up as this process takes the queue (see the
// migration 00005), starts its lease, and sets when its webhook outbox may be claimed: when
// the previous leader's lease runs out (at once if it resigned). A queue not yet stored has
// none of these.
const sqlTakeEpoch = `
WITH old AS (SELECT name, leader_renewed_at FROM queues WHERE name = $1 FOR NO KEY UPDATE)
UPDATE queues AS q SET leader_epoch = q.leader_epoch + 1, leader_renewed_at = now(),
    webhook_handover_at = greatest(now(), old.leader_renewed_at + $2 * interval '1 millisecond')
FROM old WHERE q.name = old.name
RETURNING q.leader_epoch`

// sqlRenew renews the leases of the queues this process leads, each on the condition that its
// epoch is still this process's; a queue whose epoch moved on comes back false.
const sqlRenew = `
UPDATE queues AS q SET leader_renewed_at = CASE WHEN q.leader_epoch = m.epoch THEN now() ELSE q.leader_renewed_at END
FROM unnest($1::text[], $2::bigint[]) AS m(name, epoch)
WHERE q.name = m.name
RETURNING q.name, q.leader_epoch = m.epoch`

// sqlEndLease ends the lease as its leader resigns: the next leader need not wait it out.
const sqlEndLease = `UPDATE queues SET leader_renewed_at = NULL WHERE name = $1 AND leader_epoch = $2`

// sqlExpiredHolder finds the backend holding the queue's lock when the queue's lease is older
// than the lease (in milliseconds): none while the lease holds, or with no lease (never led,
// resigned, or led by a version that does not renew one).
const sqlExpiredHolder = `
SELECT l.pid, extract(epoch FROM now() - q.leader_renewed_at)::float8
FROM pg_locks AS l, queues AS q
WHERE q.name = $2 AND q.leader_renewed_at < now() - $3 * interval '1 millisecond'
  AND l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = 3 AND l.objid = $1 AND l.objsubid = 2 AND l.granted`

// sqlEndHolder ends a hung leader's session, waiting up to 2 s for it to end (and its locks
// with it). It needs the holder's role, or pg_signal_backend.
const sqlEndHolder = `SELECT pg_terminate_backend($1, 2000)`

// lostEpoch marks a queue whose leadership this process lost without resigning: its writes
// are refused until it leads the queue again.
const lostEpoch = -1

// leadTimeout bounds one round trip on the leadership connection. The caller's context does
// not cancel it: pgx closes a connection whose query is cancelled, and with it every lock the
// process holds.
const leadTimeout = 5 * time.Second

// Reconnection of the leadership and listening connections backs off from minBackoff to
// maxBackoff. The bound is what a failover adds to the promotion before the queues tick and
// the waiters are notified again: a standby promoted after a minute's outage is found within
// a second, not the five a longer backoff took. An attempt costs little meanwhile: a refused
// connection, or a standby that says it is one (target_session_attrs).
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = time.Second
)

// DefaultLeaderLease is Options.LeaderLease's default: a hung leader's queues tick again
// within about this much, and a leader renews every quarter of it.
const DefaultLeaderLease = 10 * time.Second

// MinLeaderLease is the shortest lease the store takes: a renewal is one round trip, which
// must fit a quarter of it with room to spare.
const MinLeaderLease = 200 * time.Millisecond

// Options are the queue store's settings; the zero value is the defaults.
type Options struct {
	// LeaderLease is how long a queue's leader may go without renewing its lease before
	// another replica ends its session and takes the queue. Every replica must use the same.
	// Default DefaultLeaderLease; at least MinLeaderLease.
	LeaderLease time.Duration
	// Now is the local clock the leader times its own lease with (the database's times every
	// other replica's view of it). Default time.Now.
	Now func() time.Time
	// Logger logs the takeovers of hung leaders, and those that failed. Default: discarded.
	Logger *slog.Logger
	// SessionURL, if set, is where the store's sessions go (db/pooler.go): the leadership
	// and listening connections and the purge's, when the pool goes through a pooler in
	// transaction mode. Default: the pool's own settings.
	SessionURL string
	// PlannerStatsEvery is how often the store analyzes the tables that outgrew their planner
	// statistics (db.AnalyzeGrown: a fresh database's first minute). Default
	// DefaultPlannerStatsEvery; negative: never.
	PlannerStatsEvery time.Duration
}

// DefaultPlannerStatsEvery is Options.PlannerStatsEvery's default: a table growing at
// thousands of rows a second is planned for at most a few seconds' worth of rows too few.
const DefaultPlannerStatsEvery = 5 * time.Second

// leader holds the leadership connection and the queues it leads, under mu (a pgx.Conn is
// not safe for concurrent use).
type leader struct {
	mu      sync.Mutex
	connCfg *pgx.ConnConfig
	conn    *pgx.Conn                 // nil while down
	held    map[int32]map[string]bool // lock key -> the queues led under it
	backoff time.Duration
	retryAt time.Time // no reconnection before

	lease  time.Duration
	now    func() time.Time
	logger *slog.Logger

	// The state a tick's commit and a Lead within the lease read, under a mutex of its own:
	// mu is held across the leadership connection's round trips (a renewal on a frozen
	// database: seconds).
	epochMu sync.Mutex
	// epochs is the leader epoch this process took for each queue it leads or led (lostEpoch
	// once the lock is gone); a queue it never led has none, and its writes are not fenced.
	epochs map[string]int64
	// renewed is when this process sent the last renewal of each queue's lease that
	// succeeded (its local clock); asked, the queues whose Lead was called since: the next
	// renewal renews them (a queue whose runner stopped calling is left to expire).
	renewed map[string]time.Time
	asked   map[string]bool
	// claimed is the epoch under which this process claimed each queue's webhook outbox.
	claimed map[string]int64
}

func (l *leader) init(o Options) {
	l.lease = max(o.LeaderLease, MinLeaderLease)
	if o.LeaderLease == 0 {
		l.lease = DefaultLeaderLease
	}
	l.now = o.Now
	if l.now == nil {
		l.now = time.Now
	}
	l.logger = o.Logger
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	l.epochs, l.renewed, l.asked, l.claimed = map[string]int64{}, map[string]time.Time{}, map[string]bool{}, map[string]int64{}
}

// renewEvery is how old a lease gets before Lead renews it; validFor, how long after its
// renewal was sent this process leads on it.
func (l *leader) renewEvery() time.Duration { return l.lease / 4 }
func (l *leader) validFor() time.Duration   { return l.lease * 3 / 4 }

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
		return db.MapError(err, "queue: leadership connection")
	}
	if _, err := conn.Exec(ctx, sqlPresence); err != nil { // counted among the replicas
		_ = conn.Close(ctx)
		l.backoff = min(max(2*l.backoff, minBackoff), maxBackoff)
		l.retryAt = time.Now().Add(l.backoff)
		return db.MapError(err, "queue: leadership connection")
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
	clear(l.renewed)
	clear(l.asked)
}

// lose ends this process's leadership of one queue whose epoch moved on (the lock is still
// held for the key's other queues, if any). The caller holds mu.
func (l *leader) lose(key int32, queueName string) {
	delete(l.held[key], queueName)
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	l.epochs[queueName] = lostEpoch
	delete(l.renewed, queueName)
	delete(l.asked, queueName)
}

// take records that this process leads queueName under key from now on, with a new epoch
// and a new lease. The caller holds mu and the lock.
func (l *leader) take(ctx context.Context, key int32, queueName string) error {
	sent := l.now()
	epoch, err := l.takeEpoch(ctx, queueName)
	if err != nil {
		return err
	}
	if l.held[key] == nil {
		l.held[key] = make(map[string]bool)
	}
	l.held[key][queueName] = true
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	l.epochs[queueName] = epoch
	l.renewed[queueName] = sent
	delete(l.asked, queueName)
	return nil
}

// renew renews, in one round trip, the lease of queueName and of every queue led whose Lead
// was called since its last renewal. The caller holds mu and the connection.
func (l *leader) renew(ctx context.Context) error {
	var names []string
	var epochs []int64
	l.epochMu.Lock()
	for q := range l.asked {
		if e, ok := l.epochs[q]; ok && e != lostEpoch {
			names, epochs = append(names, q), append(epochs, e)
		}
	}
	l.epochMu.Unlock()
	sent := l.now()
	kept, err := l.renewAll(ctx, names, epochs)
	if err != nil {
		return err
	}
	for _, q := range names {
		mine, stored := kept[q]
		switch {
		case !stored: // a queue not stored has no lease to renew; its lock is its leadership
			l.epochMu.Lock()
			l.renewed[q] = sent
			delete(l.asked, q)
			l.epochMu.Unlock()
		case mine:
			l.epochMu.Lock()
			l.renewed[q] = sent
			delete(l.asked, q)
			l.epochMu.Unlock()
		default:
			l.lose(lockKey(q), q)
		}
	}
	return nil
}

// leading reports whether this process leads queueName on a lease renewed recently enough
// that no renewal is due, and marks the queue for the next renewal. It takes no round trip.
func (l *leader) leading(queueName string) bool {
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	sent, ok := l.renewed[queueName]
	if !ok || l.epochs[queueName] == lostEpoch {
		return false
	}
	l.asked[queueName] = true
	return l.now().Sub(sent) < l.renewEvery()
}

// leaseLeft is how long this process may still act as queueName's leader on its last renewal.
func (l *leader) leaseLeft(queueName string) time.Duration {
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	sent, ok := l.renewed[queueName]
	if !ok || l.epochs[queueName] == lostEpoch {
		return 0
	}
	return max(sent.Add(l.validFor()).Sub(l.now()), 0)
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

// Lead implements queue.Store. Within its lease's first quarter a led queue's Lead takes no
// round trip; after it, the call renews the lease of every queue this process led since the
// last renewal, in one statement on the leadership connection, which is also the check that
// the connection lives. It reports false, with an Unavailable error, while the leadership
// connection is down; a connection found dead ends every leadership of this process at once,
// and the call tries to connect again, at most once per backoff interval. A queue whose lock
// another process holds on a lease older than LeaderLease is taken from it (breakHung).
func (s *Store) Lead(ctx context.Context, queueName string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, db.MapError(err, "queue: lead")
	}
	l := &s.lead
	if l.leading(queueName) {
		return true, nil
	}
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
		var err error
		switch {
		case !queues[queueName]:
			err = l.take(qctx, key, queueName) // another queue's lock, this queue's first lead
		case !l.leading(queueName): // not renewed by another call while this one waited for mu
			err = l.renew(qctx)
		}
		if err == nil {
			return l.leaseLeft(queueName) > 0, nil
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
	got, err := l.tryLock(qctx, key)
	if err == nil && !got {
		got, err = l.breakHung(qctx, key, queueName)
	}
	if err != nil {
		return false, err
	}
	if got {
		if err := l.take(qctx, key, queueName); err != nil {
			l.drop()
			return false, db.MapError(err, "queue: lead")
		}
	}
	return got, nil
}

// tryLock tries the queue's lock; a failure drops the connection.
func (l *leader) tryLock(ctx context.Context, key int32) (bool, error) {
	var got bool
	if err := l.conn.QueryRow(ctx, sqlTryLead, key).Scan(&got); err != nil {
		l.drop()
		return false, db.MapError(err, "queue: lead")
	}
	return got, nil
}

// breakHung takes the queue's lock from a holder whose lease on the queue ran out: it ends
// the holder's session and tries the lock again. A holder whose lease holds keeps it. Ending
// a session takes the holder's role or pg_signal_backend: without either the call fails with
// an error wrapping queue.ErrTakeoverRefused, logged, and the next Lead tries again.
func (l *leader) breakHung(ctx context.Context, key int32, queueName string) (bool, error) {
	pid, age, err := l.expiredHolder(ctx, key, queueName)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		l.drop()
		return false, db.MapError(err, "queue: lead")
	}
	renewed := time.Duration(age * float64(time.Second)).Round(time.Millisecond)
	var ended bool
	if err := l.conn.QueryRow(ctx, sqlEndHolder, int64(pid)).Scan(&ended); err != nil {
		if mapped := db.MapError(err, "queue: lead"); apperr.CodeOf(mapped) == apperr.Unavailable {
			l.drop()
			return false, mapped
		}
		l.logger.Error("queue: cannot end the session of a leader whose lease ran out: grant this role pg_signal_backend, or run every replica as one role",
			"queue", queueName, "pid", pid, "renewed_ago", renewed.String(), "err", err)
		return false, apperr.Wrap(apperr.Unavailable, fmt.Errorf("%w: %w", queue.ErrTakeoverRefused, err),
			"queue: the leader's lease ran out, but its session cannot be ended")
	}
	l.logger.Warn("queue: ended the session of a leader whose lease ran out", "queue", queueName, "pid", pid,
		"renewed_ago", renewed.String(), "ended", ended)
	return l.tryLock(ctx, key)
}

// claim records that this process claimed queueName's webhook outbox under epoch.
func (l *leader) claim(queueName string, epoch int64) {
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	l.claimed[queueName] = epoch
}

// claimedUnder is the epoch under which this process claimed queueName's outbox (0: never).
func (l *leader) claimedUnder(queueName string) int64 {
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	return l.claimed[queueName]
}

// LeaseLeft implements queue.LeaseStore.
func (s *Store) LeaseLeft(queueName string) time.Duration { return s.lead.leaseLeft(queueName) }

// LeaseRenewal implements queue.LeaseStore: how often a leader's Lead must be called.
func (s *Store) LeaseRenewal() time.Duration { return s.lead.renewEvery() }

// Resign implements queue.Store. The lease ends, so the next leader need not wait it out; the
// lock is released when no other queue of this process is led under the same key.
func (s *Store) Resign(ctx context.Context, queueName string) error {
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
	epoch := l.epochs[queueName]
	delete(l.epochs, queueName)
	delete(l.renewed, queueName)
	delete(l.asked, queueName)
	delete(l.claimed, queueName)
	l.epochMu.Unlock()
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leadTimeout)
	defer cancel()
	if err := l.endLease(qctx, queueName, epoch); err != nil {
		l.drop()
		return nil // the lock goes with the connection; the lease runs out
	}
	if len(queues) > 0 {
		return nil
	}
	delete(l.held, key)
	if _, err := l.conn.Exec(qctx, sqlResign, key); err != nil {
		l.drop() // the lock goes with the connection
	}
	return nil
}

// fence is the epoch condition of a leader's write to queueName: nil (no condition) when this
// process never led the queue.
func (s *Store) fence(queueName string) *int64 {
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
