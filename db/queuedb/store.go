package queuedb

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/wakeup"
)

// Store is the Postgres queue.Store (schema: db/migrations/00002_queue.sql). It shares the
// pool of the ratings store (db.DB.Pool) for its queries and opens two connections of its own: one holds the
// advisory locks of the queues this process leads (lead.go), the other LISTENs for the
// events every replica writes (notify.go). Those two, and the purge's session lock, go to
// Options.SessionURL when the pool goes through a pooler in transaction mode (db/pooler.go).
// A process opens one Store.
//
// Ticket creation is group-committed (tickets.go): concurrent CreateTicket calls are
// gathered by one committer goroutine and committed in one transaction of two round trips
// (the writes, then COMMIT without the tickets whose callers gave up meanwhile), each still
// getting its own answer.
//
// Every transaction that changes tickets' status locks its queue's row first and its tickets
// after, by id (the migration's comment gives the whole order), so the store's transactions
// do not deadlock one another; a deadlock or serialization failure, which that order should
// rule out, is retried all the same.
type Store struct {
	pool *pgxpool.Pool
	// work is the queue's own work (the leader's loads, ticks, cursors, stats, the purge, the
	// create batches, the definitions' refresh), on a few connections that clients' reads
	// cannot take: thousands of long-polls waiting for the pool starved the leader ("cannot
	// write the tick").
	work    *pgxpool.Pool
	connCfg *pgx.ConnConfig // for the dedicated connections: dedicatedConfig
	// sessions holds the purge's connection, whose turn is a session advisory lock: the work
	// pool, or, with a session URL (Options.SessionURL), one connection of its own there.
	sessions *pgxpool.Pool

	creates chan *createRequest
	ends    claimEnds     // the results' claims' ends waiting for their batch (claims_end.go)
	stop    chan struct{} // closed by Close: the committer finishes its batch and fails the rest
	// committerDone is closed when the committer has answered its last call.
	committerDone chan struct{}
	stopped       sync.WaitGroup
	once          sync.Once

	// bg is cancelled by Close; the listener runs under it.
	bg       context.Context
	cancelBG context.CancelFunc

	lead        leader
	waiters     wakeup.Waiters // WaitEvents' calls (notify.go)
	listening   atomic.Bool    // the listening connection is up: the waiters need not poll
	listenerPID atomic.Uint32  // the listening session's backend, for tests

	// commits and committed count the create transactions and the tickets they stored: their
	// ratio is how many tickets share a commit.
	commits, committed atomic.Uint64
	// uncertainCommits counts the create batches whose COMMIT went out and never answered:
	// the only way a creation that answered an error can leave a ticket (cancelled at once).
	uncertainCommits atomic.Uint64
}

var _ queue.Store = (*Store)(nil)

// New opens the queue store on the pool both stores share (db.DB.Pool): it connects its two
// dedicated connections with the pool's settings and starts its committer and listener.
// Migrate first (db.Migrate). Close it before closing the pool.
func New(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	return NewWith(ctx, pool, Options{})
}

// NewWith is New with options.
func NewWith(ctx context.Context, pool *pgxpool.Pool, o Options) (*Store, error) {
	s := &Store{
		pool:    pool,
		creates: make(chan *createRequest, 4*maxCreateBatch),
		stop:    make(chan struct{}),

		committerDone: make(chan struct{}),
	}
	base := pool.Config().ConnConfig
	if o.SessionURL != "" {
		var err error
		if base, err = db.SessionConfig(o.SessionURL); err != nil {
			return nil, err
		}
	}
	s.connCfg = dedicatedConfig(base)
	s.bg, s.cancelBG = context.WithCancel(context.WithoutCancel(ctx))
	if err := s.openPools(ctx, pool, o); err != nil {
		s.cancelBG()
		return nil, err
	}
	s.lead.connCfg = s.connCfg
	s.lead.init(o)
	if err := s.lead.connect(ctx); err != nil {
		s.closePools()
		s.cancelBG()
		return nil, err
	}
	conn, err := s.listen(ctx)
	if err != nil {
		s.lead.close()
		s.closePools()
		s.cancelBG()
		return nil, err
	}
	s.listening.Store(true) // the connection listens already
	s.stopped.Add(2)
	go func() { defer s.stopped.Done(); s.runCommitter() }()
	go func() { defer s.stopped.Done(); s.runListener(conn) }()
	if every := cmp.Or(o.PlannerStatsEvery, DefaultPlannerStatsEvery); every > 0 {
		s.stopped.Go(func() { db.KeepPlannerStats(s.bg, pool, every, s.lead.logger) })
	}
	return s, nil
}

// openPools opens the work pool (on the pool's settings) and, with a session URL, the
// purge's connection there.
func (s *Store) openPools(ctx context.Context, pool *pgxpool.Pool, o Options) error {
	wcfg := pool.Config()
	wcfg.MaxConns, wcfg.MinConns = workConns, 0
	work, err := pgxpool.NewWithConfig(ctx, wcfg)
	if err != nil {
		return db.MapError(err, "queue: work connections")
	}
	s.work, s.sessions = work, work
	if o.SessionURL == "" {
		return nil
	}
	scfg, err := pgxpool.ParseConfig(o.SessionURL)
	if err != nil {
		work.Close()
		return db.MapError(err, "queue: session connections")
	}
	scfg.ConnConfig, scfg.MaxConns, scfg.MinConns = s.connCfg.Copy(), 1, 0
	if s.sessions, err = pgxpool.NewWithConfig(ctx, scfg); err != nil {
		work.Close()
		return db.MapError(err, "queue: session connections")
	}
	return nil
}

func (s *Store) closePools() {
	if s.sessions != s.work {
		s.sessions.Close()
	}
	s.work.Close()
}

// dedicatedConfig is base (the pool's connection settings, or the session URL's) with TCP
// keepalives that find a dead peer in about 30 s (Go's defaults take 2.5 minutes: 15 s idle,
// then 9 probes 15 s apart): the listening connection only reads, and until then its waiters
// wait for notifications on a connection that is gone.
func dedicatedConfig(base *pgx.ConnConfig) *pgx.ConnConfig {
	cfg := base.Copy()
	d := &net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3},
	}
	cfg.DialFunc = d.DialContext
	// The server's side of the same: a host cut off from the network, or whose process hangs
	// with its socket open, loses its sessions (the leadership connection's, and with it its
	// locks) in about 30 s, where the server's defaults (7200 s idle, 9 probes 75 s apart) kept
	// its queues from every other replica for over two hours.
	// They are set once connected, not in the start-up packet, which pgbouncer (in session
	// mode, for a session URL) refuses with parameters it does not know.
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgconn.PgConn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		_, err := conn.Exec(ctx, sqlServerKeepalives).ReadAll()
		return err
	}
	return cfg
}

// sqlServerKeepalives: tcp_user_timeout is in milliseconds (unacknowledged data).
const sqlServerKeepalives = `SET tcp_keepalives_idle = 15; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3; SET tcp_user_timeout = 30000`

// Close stops the committer (the batch being committed finishes; calls still queued get an
// Unavailable error), closes the dedicated connections, which ends this process's
// leaderships, and wakes every waiter. It does not close the pool. It is safe to call twice.
func (s *Store) Close() {
	s.once.Do(func() {
		close(s.stop)
		s.cancelBG()
		s.stopped.Wait()
		s.lead.close()
		s.waiters.WakeAll()
		s.closePools()
	})
}

// workConns is the size of the queue's own pool (Store.work): the committer's batch, a
// tick's commit and the leader's reads of a few queues at once.
const workConns = 4

// Name is "postgres".
func (s *Store) Name() string { return "postgres" }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return db.MapError(s.pool.Ping(ctx), "queue: ping")
}

// --- queue definitions --------------------------------------------------------------------

const queueColumns = `name, game_type, mutators, team_size, teams, strategy, expansions, regions,
    ticket_ttl, max_party_size, tick, webhook_url, webhook_secret, created_at, updated_at, rules, acceptance_timeout, allocator, match_function`

// PutQueue's statements. A queue made again after its deletion is created anew (its
// created_at, no tombstone) but keeps its event numbers and webhook cursor.
const (
	sqlLockQueueDef = `SELECT deleted_at IS NOT NULL FROM queues WHERE name = $1 FOR NO KEY UPDATE`

	sqlInsertQueue = `
INSERT INTO queues (` + queueColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
RETURNING ` + queueColumns

	sqlReplaceQueue = `
UPDATE queues AS q
SET game_type = $2, mutators = $3, team_size = $4, teams = $5, strategy = $6, expansions = $7,
    regions = $8, ticket_ttl = $9, max_party_size = $10, tick = $11, webhook_url = $12,
    webhook_secret = $13, created_at = CASE WHEN q.deleted_at IS NULL THEN q.created_at ELSE $14 END,
    updated_at = $15, rules = $16, acceptance_timeout = $17, allocator = $18, match_function = $19,
    deleted_at = NULL
WHERE name = $1
RETURNING ` + queueColumns
)

// PutQueue implements queue.Store: one transaction in two round trips, the queue's row
// locked (if it exists) and then inserted or replaced. Two calls that create the same queue
// at once both find no row; the second's insert fails on the primary key and it starts over,
// to replace the first's.
func (s *Store) PutQueue(ctx context.Context, q queue.Queue) (queue.Queue, bool, error) {
	exp, err := json.Marshal(expansionsJSON{Interval: stepsJSON(q.Expansions.Interval), MaxLatencyMS: stepsJSON(q.Expansions.MaxLatencyMS)})
	if err != nil {
		return queue.Queue{}, false, apperr.Wrap(apperr.Invalid, err, "queue: the expansions cannot be stored")
	}
	var url, secret *string
	if q.Webhook != nil {
		url, secret = &q.Webhook.URL, &q.Webhook.Secret
	}
	rules, err := queueRulesDoc(q)
	if err != nil {
		return queue.Queue{}, false, apperr.Wrap(apperr.Invalid, err, "queue: the rules cannot be stored")
	}
	args := []any{q.Name, q.GameType, notNil(q.Mutators), q.TeamSize, q.Teams, string(q.Strategy), string(exp),
		notNil(q.Regions), q.TicketTTL, q.MaxPartySize, q.Tick, url, secret, q.CreatedAt, q.UpdatedAt, rules, acceptanceTimeout(q), allocatorDoc(q), matchFunctionDoc(q)}
	for attempt := 1; ; attempt++ {
		var stored queue.Queue
		var created bool
		err := db.InTx(ctx, s.pool, "queue: put queue", func(conn *pgxpool.Conn) error {
			var found, deleted bool
			b := &pgx.Batch{}
			b.Queue("BEGIN")
			b.Queue(sqlLockQueueDef, q.Name).Query(scanIfAny(&found, &deleted))
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			write := sqlReplaceQueue
			if !found {
				write = sqlInsertQueue
			}
			b = &pgx.Batch{}
			b.Queue(write, args...).QueryRow(func(row pgx.Row) error {
				var err error
				stored, err = scanQueue(row)
				return err
			})
			b.Queue("COMMIT")
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			created = !found || deleted
			return db.Committed(conn)
		})
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.ConstraintName == "queues_pkey" && attempt < 3 {
			continue
		}
		return stored, created, err
	}
}

// GetQueue implements queue.Store.
func (s *Store) GetQueue(ctx context.Context, name string) (queue.Queue, error) {
	q, err := scanQueue(s.pool.QueryRow(ctx, `SELECT `+queueColumns+` FROM queues WHERE name = $1 AND deleted_at IS NULL`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return queue.Queue{}, noQueue(name)
	}
	return q, db.MapError(err, "queue: get queue")
}

// ListQueues implements queue.Store.
func (s *Store) ListQueues(ctx context.Context) ([]queue.Queue, error) {
	rows, err := s.work.Query(ctx, `SELECT `+queueColumns+` FROM queues WHERE deleted_at IS NULL ORDER BY name`)
	if err != nil {
		return nil, db.MapError(err, "queue: list queues")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.Queue, error) { return scanQueue(row) })
	return out, db.MapError(err, "queue: list queues")
}

// scanQueue reads a row of queueColumns, and then extra.
func scanQueue(row pgx.Row, extra ...any) (queue.Queue, error) {
	var q queue.Queue
	var strategy string
	var exp, rules []byte
	var teamSize, teams, party int16
	var url, secret *string
	var acceptance *time.Duration
	var allocator, function []byte
	dst := append([]any{&q.Name, &q.GameType, &q.Mutators, &teamSize, &teams, &strategy, &exp, &q.Regions,
		&q.TicketTTL, &party, &q.Tick, &url, &secret, &q.CreatedAt, &q.UpdatedAt, &rules, &acceptance, &allocator, &function}, extra...)
	if err := row.Scan(dst...); err != nil {
		return queue.Queue{}, err
	}
	if acceptance != nil {
		q.Acceptance = &queue.Acceptance{Timeout: *acceptance}
	}
	if allocator != nil {
		var a allocatorJSON
		if err := json.Unmarshal(allocator, &a); err != nil {
			return queue.Queue{}, fmt.Errorf("stored allocator of queue %q: %w", q.Name, err)
		}
		q.Allocator = &queue.Allocator{URL: a.URL, Secret: a.Secret, Timeout: time.Duration(a.TimeoutMS) * time.Millisecond}
	}
	if function != nil {
		mf, err := readMatchFunction(function)
		if err != nil {
			return queue.Queue{}, fmt.Errorf("stored match function of queue %q: %w", q.Name, err)
		}
		q.MatchFunction = mf
	}
	if err := readQueueRules(&q, rules); err != nil {
		return queue.Queue{}, fmt.Errorf("stored rules of queue %q: %w", q.Name, err)
	}
	var e expansionsJSON
	if err := json.Unmarshal(exp, &e); err != nil {
		return queue.Queue{}, fmt.Errorf("stored expansions of queue %q: %w", q.Name, err)
	}
	q.Expansions = queue.Expansions{Interval: e.Interval.steps(), MaxLatencyMS: e.MaxLatencyMS.steps()}
	q.TeamSize, q.Teams, q.MaxPartySize, q.Strategy = int(teamSize), int(teams), int(party), queue.Strategy(strategy)
	if url != nil && secret != nil {
		q.Webhook = &queue.Webhook{URL: *url, Secret: *secret}
	}
	return q, nil
}

// notNil is s, or an empty list for a nil one (the array columns are NOT NULL).
func notNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func noQueue(name string) error { return apperr.New(apperr.NotFound, "no queue %q", name) }

// PublishStats implements queue.Store: an upsert, if the queue exists.
func (s *Store) PublishStats(ctx context.Context, queueName string, st queue.Stats) error {
	b, err := queue.EncodeStats(st)
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "queue: the stats cannot be stored")
	}
	if st.Partition != "" {
		return s.publishPartitionStats(ctx, queueName, st, b)
	}
	mine := s.fence(queueName)
	tag, err := s.work.Exec(ctx, `
INSERT INTO queue_stats (queue, at, stats)
SELECT $1, $2, $3::jsonb WHERE EXISTS (
    SELECT 1 FROM queues WHERE name = $1 AND deleted_at IS NULL AND ($4::bigint IS NULL OR leader_epoch = $4))
ON CONFLICT (queue) DO UPDATE SET at = excluded.at, stats = excluded.stats`, queueName, st.At, string(b), mine)
	if err != nil {
		return db.MapError(err, "queue: publish stats")
	}
	if tag.RowsAffected() == 0 {
		if mine != nil {
			var live bool
			if err := s.work.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queues WHERE name = $1 AND deleted_at IS NULL)`, queueName).Scan(&live); err == nil && live {
				return deposed(queueName)
			}
		}
		return noQueue(queueName)
	}
	return nil
}

// PublishedStats implements queue.Store: the queue's row and its partitions' (not fenced by
// the queue's row: lead_partition.go), while the queue is defined.
func (s *Store) PublishedStats(ctx context.Context, queueName string) ([]queue.Stats, error) {
	rows, err := s.pool.Query(ctx, `
SELECT s.stats FROM queue_stats AS s JOIN queues AS q ON q.name = s.queue AND q.deleted_at IS NULL
WHERE s.queue = $1
UNION ALL
SELECT p.stats FROM queue_partitions AS p JOIN queues AS q ON q.name = p.queue AND q.deleted_at IS NULL
WHERE p.queue = $1 AND p.stats IS NOT NULL`, queueName)
	if err != nil {
		return nil, db.MapError(err, "queue: published stats")
	}
	docs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, db.MapError(err, "queue: published stats")
	}
	out, err := queue.DecodePublished(docs)
	if err != nil {
		return nil, apperr.Wrap(apperr.Internal, err, "queue: stored stats of queue "+queueName+" cannot be read")
	}
	return out, nil
}
