package queuedb

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A partition of a queue with partition_by (queue.PartitionKey: the queue's name and the
// value) is led as a queue is (lead.go): its lock is keyed by the hash of its key, and its
// epoch and lease are its row of queue_partitions (migration 00017), made when it is first
// led. Its leader's writes are fenced by its own epoch, not the queue's: the queue's is its
// webhook outbox's leader's, which may be another replica.
const sqlTakePartition = `
INSERT INTO queue_partitions AS p (queue, value, leader_epoch, leader_renewed_at)
SELECT $1, $2, 1, now() WHERE EXISTS (SELECT 1 FROM queues WHERE name = $1)
ON CONFLICT (queue, value) DO UPDATE SET leader_epoch = p.leader_epoch + 1, leader_renewed_at = now()
RETURNING p.leader_epoch`

const sqlRenewPartitions = `
UPDATE queue_partitions AS p SET leader_renewed_at = CASE WHEN p.leader_epoch = m.epoch THEN now() ELSE p.leader_renewed_at END
FROM unnest($1::text[], $2::text[], $3::bigint[]) AS m(queue, value, epoch)
WHERE p.queue = m.queue AND p.value = m.value
RETURNING p.queue || chr(31) || p.value, p.leader_epoch = m.epoch`

const sqlEndPartitionLease = `UPDATE queue_partitions SET leader_renewed_at = NULL WHERE queue = $1 AND value = $2 AND leader_epoch = $3`

const sqlExpiredPartitionHolder = `
SELECT l.pid, extract(epoch FROM now() - p.leader_renewed_at)::float8
FROM pg_locks AS l, queue_partitions AS p
WHERE p.queue = $2 AND p.value = $4 AND p.leader_renewed_at < now() - $3 * interval '1 millisecond'
  AND l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = 3 AND l.objid = $1 AND l.objsubid = 2 AND l.granted`

// sqlLockPartition locks a partition's row for its leader's commit: the epoch of the fence.
const sqlLockPartition = `SELECT leader_epoch FROM queue_partitions WHERE queue = $1 AND value = $2 FOR NO KEY UPDATE`

// Each replica's leadership session holds a lock of namespace 4 keyed by its own backend pid
// while it lives: their number is the live replicas (queue.PartitionStore.Partitions), which
// share the partitions out. A replica whose session ended (killed, partitioned away) stops
// counting at once; one that hangs counts until its session is ended by a takeover.
const sqlPresence = `SELECT pg_advisory_lock(4, pg_backend_pid())`

const sqlReplicas = `
SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND classid = 4 AND objsubid = 2 AND granted`

// takeEpoch counts up the epoch of the queue or partition key as this process takes it.
func (l *leader) takeEpoch(ctx context.Context, key string) (int64, error) {
	var epoch int64
	var err error
	if name, value := queue.SplitPartitionKey(key); value != "" {
		err = l.conn.QueryRow(ctx, sqlTakePartition, name, value).Scan(&epoch)
	} else {
		err = l.conn.QueryRow(ctx, sqlTakeEpoch, key, l.lease.Milliseconds()).Scan(&epoch)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	return epoch, err
}

// renewAll renews the leases of the queues and partitions named, with their epochs, and
// returns which were stored and whether each is still this process's.
func (l *leader) renewAll(ctx context.Context, names []string, epochs []int64) (map[string]bool, error) {
	var qs, pqs, pvs []string
	var qe, pe []int64
	for i, k := range names {
		if name, value := queue.SplitPartitionKey(k); value != "" {
			pqs, pvs, pe = append(pqs, name), append(pvs, value), append(pe, epochs[i])
		} else {
			qs, qe = append(qs, k), append(qe, epochs[i])
		}
	}
	kept := map[string]bool{}
	var name string
	var mine bool
	read := func() error { kept[name] = mine; return nil }
	if len(qs) > 0 || len(pqs) == 0 {
		rows, err := l.conn.Query(ctx, sqlRenew, qs, qe)
		if err != nil {
			return nil, err
		}
		if _, err := pgx.ForEachRow(rows, []any{&name, &mine}, read); err != nil {
			return nil, err
		}
	}
	if len(pqs) > 0 {
		rows, err := l.conn.Query(ctx, sqlRenewPartitions, pqs, pvs, pe)
		if err != nil {
			return nil, err
		}
		if _, err := pgx.ForEachRow(rows, []any{&name, &mine}, read); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// endLease ends the lease of the queue or partition key as its leader resigns.
func (l *leader) endLease(ctx context.Context, key string, epoch int64) error {
	var err error
	if name, value := queue.SplitPartitionKey(key); value != "" {
		_, err = l.conn.Exec(ctx, sqlEndPartitionLease, name, value, epoch)
	} else {
		_, err = l.conn.Exec(ctx, sqlEndLease, key, epoch)
	}
	return err
}

// expiredHolder finds the backend holding key's lock on a lease older than the lease.
func (l *leader) expiredHolder(ctx context.Context, lock int32, key string) (pid uint32, age float64, err error) {
	if name, value := queue.SplitPartitionKey(key); value != "" {
		err = l.conn.QueryRow(ctx, sqlExpiredPartitionHolder, int64(uint32(lock)), name, l.lease.Milliseconds(), value).Scan(&pid, &age)
	} else {
		err = l.conn.QueryRow(ctx, sqlExpiredHolder, int64(uint32(lock)), key, l.lease.Milliseconds()).Scan(&pid, &age)
	}
	return pid, age, err
}

// Partitions implements queue.PartitionStore, in one round trip: the values among the
// searching tickets (through their players' rows, not the queue's whole history of tickets),
// and the partitions led before; and the live replicas' leadership sessions.
func (s *Store) Partitions(ctx context.Context, q queue.Queue) ([]string, int, error) {
	def := ""
	if d := q.Attributes[q.PartitionBy].Default; d != nil {
		def = d.Str
	}
	var values []string
	var replicas int
	b := &pgx.Batch{}
	b.Queue(`
SELECT coalesce(t.attributes->>$2, $3) FROM queue_searching AS s JOIN queue_tickets AS t ON t.id = s.ticket_id WHERE s.queue = $1
UNION SELECT value FROM queue_partitions WHERE queue = $1
ORDER BY 1`, q.Name, q.PartitionBy, def).Query(func(rows pgx.Rows) (err error) {
		values, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	b.Queue(sqlReplicas).QueryRow(func(row pgx.Row) error { return row.Scan(&replicas) })
	if err := s.work.SendBatch(ctx, b).Close(); err != nil {
		return nil, 0, db.MapError(err, "queue: partitions")
	}
	out := values[:0]
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return out, max(replicas, 1), nil // this one's session may be reconnecting: it still counts itself
}

// publishPartitionStats keeps a partition's snapshot, fenced by its epoch.
func (s *Store) publishPartitionStats(ctx context.Context, queueName string, st queue.Stats, b []byte) error {
	mine := s.fence(queue.PartitionKey(queueName, st.Partition))
	tag, err := s.work.Exec(ctx, `
UPDATE queue_partitions SET stats_at = $3, stats = $4::jsonb
WHERE queue = $1 AND value = $2 AND ($5::bigint IS NULL OR leader_epoch = $5)`, queueName, st.Partition, st.At, string(b), mine)
	if err != nil {
		return db.MapError(err, "queue: publish stats")
	}
	if tag.RowsAffected() == 0 {
		return deposed(queueName + " (partition " + st.Partition + ")")
	}
	return nil
}

// partitionOf is the partition a leader's change is a tick of ("": the queue's one, or not a
// tick).
func partitionOf(cause queue.Cause) string {
	switch c := cause.(type) {
	case queue.TickMatches:
		return c.Write.Partition
	case queue.TickProposals:
		return c.Write.Partition
	}
	return ""
}
