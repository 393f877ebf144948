package queuedb

import (
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
)

// Store is the Postgres queue.Store (schema: db/migrations/00002_queue.sql). It shares the
// pool of the ratings store (db.DB.Pool) for its queries and opens two connections of its own: one holds the
// advisory locks of the queues this process leads (lead.go), the other LISTENs for the
// events every replica writes (notify.go). A process opens one Store.
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

	creates chan *createRequest
	stop    chan struct{} // closed by Close: the committer finishes its batch and fails the rest
	// committerDone is closed when the committer has answered its last call.
	committerDone chan struct{}
	stopped       sync.WaitGroup
	once          sync.Once

	// bg is cancelled by Close; the listener runs under it.
	bg       context.Context
	cancelBG context.CancelFunc

	lead        leader
	notify      notifier
	listenerPID atomic.Uint32 // the listening session's backend, for tests

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
		connCfg: dedicatedConfig(pool),
		creates: make(chan *createRequest, 4*maxCreateBatch),
		stop:    make(chan struct{}),

		committerDone: make(chan struct{}),
	}
	s.bg, s.cancelBG = context.WithCancel(context.WithoutCancel(ctx))
	wcfg := pool.Config()
	wcfg.MaxConns, wcfg.MinConns = workConns, 0
	work, err := pgxpool.NewWithConfig(ctx, wcfg)
	if err != nil {
		s.cancelBG()
		return nil, db.MapError(err, "queue: work connections")
	}
	s.work = work
	s.lead.connCfg = s.connCfg
	s.lead.init(o)
	if err := s.lead.connect(ctx); err != nil {
		s.work.Close()
		s.cancelBG()
		return nil, err
	}
	conn, err := s.listen(ctx)
	if err != nil {
		s.lead.close()
		s.work.Close()
		s.cancelBG()
		return nil, err
	}
	s.notify.init()
	s.stopped.Add(2)
	go func() { defer s.stopped.Done(); s.runCommitter() }()
	go func() { defer s.stopped.Done(); s.runListener(conn) }()
	return s, nil
}

// dedicatedConfig is the pool's connection settings with TCP keepalives that find a dead
// peer in about 30 s (Go's defaults take 2.5 minutes: 15 s idle, then 9 probes 15 s apart):
// the listening connection only reads, and until then its waiters wait for notifications on
// a connection that is gone.
func dedicatedConfig(pool *pgxpool.Pool) *pgx.ConnConfig {
	cfg := pool.Config().ConnConfig.Copy()
	d := &net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3},
	}
	cfg.DialFunc = d.DialContext
	// The server's side of the same: a host cut off from the network, or whose process hangs
	// with its socket open, loses its sessions (the leadership connection's, and with it its
	// locks) in about 30 s, where the server's defaults (7200 s idle, 9 probes 75 s apart) kept
	// its queues from every other replica for over two hours.
	cfg.RuntimeParams["tcp_keepalives_idle"] = "15"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "5"
	cfg.RuntimeParams["tcp_keepalives_count"] = "3"
	cfg.RuntimeParams["tcp_user_timeout"] = "30000" // ms: unacknowledged data
	return cfg
}

// Close stops the committer (the batch being committed finishes; calls still queued get an
// Unavailable error), closes the dedicated connections, which ends this process's
// leaderships, and wakes every waiter. It does not close the pool. It is safe to call twice.
func (s *Store) Close() {
	s.once.Do(func() {
		close(s.stop)
		s.cancelBG()
		s.stopped.Wait()
		s.lead.close()
		s.notify.wakeAll()
		s.work.Close()
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
    ticket_ttl, max_party_size, tick, webhook_url, webhook_secret, created_at, updated_at, rules, acceptance_timeout, allocator`

// PutQueue's statements. A queue made again after its deletion is created anew (its
// created_at, no tombstone) but keeps its event numbers and webhook cursor.
const (
	sqlLockQueueDef = `SELECT deleted_at IS NOT NULL FROM queues WHERE name = $1 FOR NO KEY UPDATE`

	sqlInsertQueue = `
INSERT INTO queues (` + queueColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
RETURNING ` + queueColumns

	sqlReplaceQueue = `
UPDATE queues AS q
SET game_type = $2, mutators = $3, team_size = $4, teams = $5, strategy = $6, expansions = $7,
    regions = $8, ticket_ttl = $9, max_party_size = $10, tick = $11, webhook_url = $12,
    webhook_secret = $13, created_at = CASE WHEN q.deleted_at IS NULL THEN q.created_at ELSE $14 END,
    updated_at = $15, rules = $16, acceptance_timeout = $17, allocator = $18, deleted_at = NULL
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
		notNil(q.Regions), q.TicketTTL, q.MaxPartySize, q.Tick, url, secret, q.CreatedAt, q.UpdatedAt, rules, acceptanceTimeout(q), allocatorDoc(q)}
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
	var allocator []byte
	dst := append([]any{&q.Name, &q.GameType, &q.Mutators, &teamSize, &teams, &strategy, &exp, &q.Regions,
		&q.TicketTTL, &party, &q.Tick, &url, &secret, &q.CreatedAt, &q.UpdatedAt, &rules, &acceptance, &allocator}, extra...)
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

// --- reads --------------------------------------------------------------------------------

const ticketColumns = `t.id, t.queue, t.status, t.players, t.latencies, t.created_at, t.expires_at, t.updated_at,
    t.reason, t.assignment, t.idempotency_key, t.body_hash, t.backfill, t.attributes, t.owner, t.proposal`

// GetTicket implements queue.Store.
func (s *Store) GetTicket(ctx context.Context, id string) (queue.Ticket, error) {
	t, err := scanTicket(s.pool.QueryRow(ctx, `SELECT `+ticketColumns+` FROM queue_tickets AS t WHERE t.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return queue.Ticket{}, apperr.New(apperr.NotFound, "no ticket %q", id)
	}
	return t, db.MapError(err, "queue: get ticket")
}

// scanTicket reads a row of ticketColumns, and then extra.
func scanTicket(row pgx.Row, extra ...any) (queue.Ticket, error) {
	var t queue.Ticket
	var status string
	var players, latencies, assignment, backfill, attributes, proposal []byte
	var key *string
	var hash []byte
	dst := append([]any{&t.ID, &t.Queue, &status, &players, &latencies, &t.CreatedAt, &t.ExpiresAt, &t.UpdatedAt,
		&t.Reason, &assignment, &key, &hash, &backfill, &attributes, &t.Owner, &proposal}, extra...)
	if err := row.Scan(dst...); err != nil {
		return queue.Ticket{}, err
	}
	var err error
	if t.Proposal, err = readTicketProposal(proposal); err != nil {
		return queue.Ticket{}, fmt.Errorf("stored proposal of ticket %q: %w", t.ID, err)
	}
	if t.Attributes, err = readTicketAttributes(attributes); err != nil {
		return queue.Ticket{}, fmt.Errorf("stored attributes of ticket %q: %w", t.ID, err)
	}
	t.Status = queue.Status(status)
	var ps []ticketPlayerJSON
	if err := json.Unmarshal(players, &ps); err != nil {
		return queue.Ticket{}, fmt.Errorf("stored players of ticket %q: %w", t.ID, err)
	}
	t.Players = make([]queue.Player, len(ps))
	for i, p := range ps {
		t.Players[i] = queue.Player(p)
	}
	if latencies != nil {
		if err := json.Unmarshal(latencies, &t.Latencies); err != nil {
			return queue.Ticket{}, fmt.Errorf("stored latencies of ticket %q: %w", t.ID, err)
		}
	}
	if assignment != nil {
		var a assignmentJSON
		if err := json.Unmarshal(assignment, &a); err != nil {
			return queue.Ticket{}, fmt.Errorf("stored assignment of ticket %q: %w", t.ID, err)
		}
		t.Assignment = a.assignment()
	}
	if backfill != nil {
		var b backfillJSON
		if err := json.Unmarshal(backfill, &b); err != nil {
			return queue.Ticket{}, fmt.Errorf("stored backfill of ticket %q: %w", t.ID, err)
		}
		t.Backfill = b.backfill()
	}
	if key != nil {
		t.IdempotencyKey = *key
		copy(t.BodyHash[:], hash)
	}
	return t, nil
}

const sqlGetMatch = `
SELECT id, queue, created_at, region, teams, pairs, skill_difference, average_difference,
       coalesce(backfill_of, ''), coalesce(backfill_ticket, ''), attributes, connection
FROM queue_matches WHERE id = $1`

// GetMatch implements queue.Store.
func (s *Store) GetMatch(ctx context.Context, id string) (queue.Match, error) {
	return s.getMatch(ctx, s.pool, id)
}

// getMatch reads a match with q (the pool, or a transaction's connection).
func (s *Store) getMatch(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string) (queue.Match, error) {
	m, err := scanMatch(q.QueryRow(ctx, sqlGetMatch, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return queue.Match{}, apperr.New(apperr.NotFound, "no match %q", id)
	}
	return m, db.MapError(err, "queue: get match")
}

// scanMatch reads a row of sqlGetMatch's columns.
func scanMatch(row pgx.Row) (queue.Match, error) {
	var m queue.Match
	var teams, pairs, attributes, connection []byte
	if err := row.Scan(&m.ID, &m.Queue, &m.CreatedAt, &m.Region, &teams, &pairs,
		&m.SkillDifference, &m.AverageDifference, &m.BackfillOf, &m.BackfillTicket, &attributes, &connection); err != nil {
		return queue.Match{}, err
	}
	if err := decodeMatchColumns(&m, teams, pairs, attributes); err != nil {
		return queue.Match{}, fmt.Errorf("stored match %q: %w", m.ID, err)
	}
	if connection != nil {
		m.Connection = connection
	}
	return m, nil
}

// The queue's row, for NotFound, with up to $3 events after $2 (NULLs when it has none). The
// events of a deleted queue stay readable. Each event's owner is looked up by its ticket's
// key: as a join, a read of a few hundred events was planned as a hash join over every
// ticket kept (a scan that grows with the retention: 33 ms at 18,000 tickets).
const sqlEvents = `
SELECT e.seq, e.type, e.ticket_id, e.match_id, e.team, e.reason, e.at,
       (SELECT t.owner FROM queue_tickets AS t WHERE t.id = e.ticket_id)
FROM queues AS q
LEFT JOIN LATERAL (
    SELECT * FROM queue_events
    WHERE queue = q.name AND seq > $2
    ORDER BY seq
    LIMIT $3
) AS e ON true
WHERE q.name = $1
ORDER BY e.seq`

// Events implements queue.Store.
func (s *Store) Events(ctx context.Context, queueName string, after int64, limit int) ([]queue.Event, error) {
	rows, err := s.pool.Query(ctx, sqlEvents, queueName, after, max(limit, 0))
	if err != nil {
		return nil, db.MapError(err, "queue: events")
	}
	out, err := scanEvents(rows, queueName)
	return out, db.MapError(err, "queue: events")
}

// The tickets of up to $3 events of queue $1 after $2, as they are now: the tickets sqlEvents'
// rows name, read by key (LIMIT 1 keeps the subquery a lookup per event, never a join the
// planner could turn into a scan of every kept ticket).
const sqlEventTickets = `
SELECT ` + ticketColumns + `
FROM (
    SELECT DISTINCT ticket_id FROM (
        SELECT ticket_id FROM queue_events WHERE queue = $1 AND seq > $2 ORDER BY seq LIMIT $3
    ) AS e
) AS e
CROSS JOIN LATERAL (SELECT * FROM queue_tickets WHERE id = e.ticket_id LIMIT 1) AS t`

// FeedEvents implements queue.Store: the events and their tickets in one round trip, each
// statement in its own snapshot. A ticket read after its events were is as new as they are,
// or newer; an event committed between the two only adds its ticket.
func (s *Store) FeedEvents(ctx context.Context, queueName string, after int64, limit int) ([]queue.Event, []queue.Ticket, error) {
	var evs []queue.Event
	var tickets []queue.Ticket
	b := &pgx.Batch{}
	b.Queue(sqlEvents, queueName, after, max(limit, 0)).Query(func(rows pgx.Rows) (err error) {
		evs, err = scanEvents(rows, queueName)
		return err
	})
	b.Queue(sqlEventTickets, queueName, after, max(limit, 0)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			t, err := scanTicket(rows)
			if err != nil {
				return err
			}
			tickets = append(tickets, t)
		}
		return rows.Err()
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, db.MapError(err, "queue: feed events")
	}
	return evs, tickets, nil
}

// scanEvents reads sqlEvents' rows: NotFound when the queue has no row.
func scanEvents(rows pgx.Rows, queueName string) ([]queue.Event, error) {
	var out []queue.Event
	found := false
	var (
		seq         *int64
		typ, ticket *string
		match       *string
		team        *int16
		reason      *string
		at          *time.Time
		owner       *string // the ticket's; NULL once purged
	)
	_, err := pgx.ForEachRow(rows, []any{&seq, &typ, &ticket, &match, &team, &reason, &at, &owner}, func() error {
		found = true
		if seq == nil {
			return nil
		}
		e := queue.Event{Queue: queueName, Seq: *seq, Type: queue.EventType(*typ), TicketID: *ticket, Reason: *reason, At: *at}
		if match != nil {
			e.MatchID = *match
		}
		if team != nil {
			e.Team = int(*team)
		}
		if owner != nil {
			e.Owner = *owner
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, noQueue(queueName)
	}
	return out, nil
}

// EventHead implements queue.Store.
func (s *Store) EventHead(ctx context.Context, queueName string) (int64, error) {
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT event_seq FROM queues WHERE name = $1`, queueName).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, noQueue(queueName)
	}
	return seq, db.MapError(err, "queue: event head")
}

// WebhookCursor implements queue.Store. A leader's first read under its epoch claims the
// queue's outbox (migration 00010): from then on only its cursor writes go through. It claims
// only once the previous leader's lease has run out (that leader may still be posting,
// unaware it was deposed); until then the read fails with an error wrapping
// queue.ErrOutboxHandover.
func (s *Store) WebhookCursor(ctx context.Context, queueName string) (int64, error) {
	epoch, led := s.lead.epoch(queueName)
	if !led || epoch == lostEpoch || s.lead.claimedUnder(queueName) == epoch {
		var seq int64
		err := s.work.QueryRow(ctx, `SELECT webhook_seq FROM queues WHERE name = $1`, queueName).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, noQueue(queueName)
		}
		return seq, db.MapError(err, "queue: webhook cursor")
	}
	var seq int64
	var claimed, current bool
	var wait float64
	err := s.work.QueryRow(ctx, `
WITH claim AS (
    UPDATE queues SET webhook_epoch = $2
    WHERE name = $1 AND leader_epoch = $2 AND (webhook_handover_at IS NULL OR webhook_handover_at <= now())
    RETURNING webhook_seq)
SELECT coalesce((SELECT webhook_seq FROM claim), q.webhook_seq), EXISTS (SELECT 1 FROM claim),
    q.leader_epoch = $2, coalesce(extract(epoch FROM q.webhook_handover_at - now()), 0)::float8
FROM queues AS q WHERE q.name = $1`, queueName, epoch).Scan(&seq, &claimed, &current, &wait)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, noQueue(queueName)
	case err != nil:
		return 0, db.MapError(err, "queue: webhook cursor")
	case !current:
		return 0, deposed(queueName)
	case !claimed:
		return 0, apperr.Wrap(apperr.Unavailable, queue.ErrOutboxHandover,
			fmt.Sprintf("queue: the webhook outbox of queue %q is the previous leader's for another %v", queueName,
				time.Duration(wait*float64(time.Second)).Round(time.Millisecond)))
	}
	s.lead.claim(queueName, epoch)
	return seq, nil
}

// SetWebhookCursor implements queue.Store. The cursor never goes back: acknowledgements may
// arrive out of order. A leader's write goes through while the outbox is its own: until a
// later leader claimed it (WebhookCursor), which is after this one's lease ran out.
func (s *Store) SetWebhookCursor(ctx context.Context, queueName string, seq int64) error {
	var fenced bool
	err := s.work.QueryRow(ctx, `
UPDATE queues AS q SET webhook_seq = CASE WHEN $3::bigint IS NULL OR q.webhook_epoch = $3 THEN greatest(q.webhook_seq, $2) ELSE q.webhook_seq END
WHERE q.name = $1
RETURNING NOT ($3::bigint IS NULL OR q.webhook_epoch = $3)`, queueName, seq, s.webhookFence(queueName)).Scan(&fenced)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return noQueue(queueName)
	case err != nil:
		return db.MapError(err, "queue: set webhook cursor")
	case fenced:
		return deposed(queueName)
	}
	return nil
}

// webhookFence is the outbox condition of a cursor write: the epoch under which this process
// claimed the outbox, else its leader epoch (refused: it has not claimed it), else none (it
// never led the queue).
func (s *Store) webhookFence(queueName string) *int64 {
	if e := s.lead.claimedUnder(queueName); e != 0 {
		return &e
	}
	return s.fence(queueName)
}

// --- changes ------------------------------------------------------------------------------

// Changes reads by transaction id, not by a sequence: a sequence number is taken when a
// transaction writes, but the transaction may commit after one taken later has been read,
// and a reader that moved its cursor past the later one would never see it. Instead each
// ticket row records the transaction that last wrote it (changed_xid), and the cursor is the
// xmin of the snapshot the read ran in: every transaction below it had ended when the read
// ran, so its writes were in the read. A transaction that commits after the read was still
// running when the read's snapshot was taken (so its id is at or above that snapshot's xmin)
// or started after it (its id is higher still): the next read, of the rows written by
// transactions at or above the cursor, returns its rows whenever it commits. Rows written by
// transactions that were already committed at the read but are at or above its xmin come
// back again, which the contract allows. A transaction that stays open for long (anywhere on
// the server: xids are cluster-wide) holds the xmin back, and each read returns what was
// written since it began: more rows, never a missed one.
//
// The zero cursor reads the queue's searching tickets through queue_searching; a cursor
// reads the queue's range of queue_tickets_changes. The cursor comes from the same
// statement, so the same snapshot; a row of NULL ticket columns says only that.
const (
	sqlChangesAll = `
WITH cur AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin,
           EXISTS (SELECT 1 FROM queues WHERE name = $1) AS queue_exists
)
SELECT ` + ticketColumns + `, cur.xmin, cur.queue_exists
FROM cur
LEFT JOIN LATERAL (
    SELECT t.*
    FROM (SELECT DISTINCT ticket_id FROM queue_searching WHERE queue = $1) AS s
    JOIN queue_tickets AS t ON t.id = s.ticket_id
) AS t ON true
ORDER BY t.created_at, t.id`

	sqlChangesSince = `
WITH cur AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin,
           EXISTS (SELECT 1 FROM queues WHERE name = $1) AS queue_exists
)
SELECT ` + changesColumns + `, cur.xmin, cur.queue_exists
FROM cur
LEFT JOIN LATERAL (
    SELECT * FROM queue_tickets WHERE queue = $1 AND changed_xid >= $2::xid8
) AS t ON true
ORDER BY t.created_at, t.id`
)

// changesColumns are ticketColumns as Changes since a cursor reads them: a ticket no longer
// searching comes without its players, latencies, assignment and backfill, which its reader
// drops unread (the leader only removes the ticket from its view). About half of what a
// tick's load reads is the tickets the previous tick matched, and their JSON was most of the
// load's time, which stalls the creations that run beside it (README, "Ticket queue").
const changesColumns = `t.id, t.queue, t.status,
    CASE WHEN t.status = 'searching' THEN t.players ELSE '[]'::jsonb END,
    CASE WHEN t.status = 'searching' THEN t.latencies END,
    t.created_at, t.expires_at, t.updated_at, t.reason, NULL::jsonb, t.idempotency_key, t.body_hash,
    CASE WHEN t.status = 'searching' THEN t.backfill END,
    CASE WHEN t.status = 'searching' THEN t.attributes END, t.owner, NULL::jsonb`

// Changes implements queue.Store.
func (s *Store) Changes(ctx context.Context, queueName string, since queue.Cursor) ([]queue.Ticket, queue.Cursor, error) {
	var rows pgx.Rows
	var err error
	if since == 0 {
		rows, err = s.work.Query(ctx, sqlChangesAll, queueName)
	} else {
		rows, err = s.work.Query(ctx, sqlChangesSince, queueName, uint64(since))
	}
	if err != nil {
		return nil, since, db.MapError(err, "queue: changes")
	}
	defer rows.Close()
	var out []queue.Ticket
	var xmin uint64
	var exists bool
	for rows.Next() {
		if rows.RawValues()[0] == nil { // no ticket: only the cursor
			dst := make([]any, len(rows.FieldDescriptions()))
			dst[len(dst)-2], dst[len(dst)-1] = &xmin, &exists
			if err := rows.Scan(dst...); err != nil {
				return nil, since, db.MapError(err, "queue: changes")
			}
			continue
		}
		t, err := scanTicket(rows, &xmin, &exists)
		if err != nil {
			return nil, since, db.MapError(err, "queue: changes")
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, since, db.MapError(err, "queue: changes")
	}
	if !exists {
		return nil, since, noQueue(queueName)
	}
	return out, queue.Cursor(xmin), nil
}

// --- JSON columns -------------------------------------------------------------------------

// The JSON stored in jsonb columns is named like the API's fields, so that it reads well in
// psql and does not change when a Go field is renamed.
type (
	stepJSON struct {
		AfterS float64 `json:"after_s"`
		Value  float64 `json:"value"`
	}
	stepsJSONList  []stepJSON
	expansionsJSON struct {
		Interval     stepsJSONList `json:"interval"`
		MaxLatencyMS stepsJSONList `json:"max_latency_ms,omitempty"`
	}
	ticketPlayerJSON struct {
		ID     string             `json:"id"`
		Rating float64            `json:"rating"`
		Source queue.RatingSource `json:"source"`
		Roles  []string           `json:"roles,omitempty"`
	}
	assignmentJSON struct {
		MatchID    string               `json:"match_id"`
		Team       int                  `json:"team"`
		Region     string               `json:"region"`
		Teams      [][]string           `json:"teams"`
		Joined     [][]string           `json:"joined,omitempty"`
		FillID     string               `json:"fill_id,omitempty"`
		Attributes []matchAttributeJSON `json:"attributes,omitempty"`
		TeamNames  []string             `json:"team_names,omitempty"`
		Roles      map[string]string    `json:"roles,omitempty"`
		OpenSlots  []int                `json:"open_slots,omitempty"`
		Connection json.RawMessage      `json:"connection,omitempty"`
	}
	backfillJSON struct {
		MatchID   string             `json:"match_id"`
		Teams     []backfillTeamJSON `json:"teams"`
		OpenSlots []int              `json:"open_slots"`
		Region    string             `json:"region,omitempty"`
		Bots      *botRuleJSON       `json:"bots,omitempty"`
	}
	backfillTeamJSON struct {
		Players []string  `json:"players"`
		Bots    []float64 `json:"bots,omitempty"`
	}
	botRuleJSON struct {
		MeanRating     float64 `json:"mean_rating"`
		TargetPlayers  int     `json:"target_players"`
		RecommendedMin int     `json:"recommended_min"`
		RecommendedMax int     `json:"recommended_max"`
	}
	matchPlayerJSON struct {
		ID       string  `json:"id"`
		TicketID string  `json:"ticket_id"`
		Rating   float64 `json:"rating"`
	}
	matchTeamJSON struct {
		Players     []matchPlayerJSON `json:"players"`
		RatingTotal float64           `json:"rating_total"`
		Name        string            `json:"name,omitempty"`
		Roles       []string          `json:"roles,omitempty"`
		OpenSlots   int               `json:"open_slots,omitempty"`
	}
	pairJSON struct {
		Players    [2]string `json:"players"`
		Difference float64   `json:"difference"`
		Interval   float64   `json:"interval"`
	}
)

func stepsJSON(steps []queue.Step) stepsJSONList {
	out := make(stepsJSONList, len(steps))
	for i, s := range steps {
		out[i] = stepJSON(s)
	}
	return out
}

func (l stepsJSONList) steps() []queue.Step {
	if len(l) == 0 {
		return nil
	}
	out := make([]queue.Step, len(l))
	for i, s := range l {
		out[i] = queue.Step(s)
	}
	return out
}

func newAssignmentJSON(a queue.Assignment) assignmentJSON {
	return assignmentJSON{MatchID: a.MatchID, Team: a.Team, Region: a.Region, Teams: a.Teams, Joined: a.Joined,
		FillID: a.FillID, Attributes: matchAttributesJSON(a.Attributes), TeamNames: a.TeamNames, Roles: a.Roles,
		OpenSlots:  a.OpenSlots,
		Connection: a.Connection}
}

func (a assignmentJSON) assignment() *queue.Assignment {
	return &queue.Assignment{MatchID: a.MatchID, Team: a.Team, Region: a.Region, Teams: a.Teams, Joined: a.Joined,
		FillID: a.FillID, Attributes: matchAttributes(a.Attributes), TeamNames: a.TeamNames, Roles: a.Roles,
		OpenSlots:  a.OpenSlots,
		Connection: a.Connection}
}

func newBackfillJSON(b *queue.Backfill) backfillJSON {
	out := backfillJSON{MatchID: b.MatchID, OpenSlots: b.OpenSlots, Region: b.Region,
		Teams: make([]backfillTeamJSON, len(b.Teams))}
	for i, t := range b.Teams {
		out.Teams[i] = backfillTeamJSON(t)
	}
	if b.Bots != nil {
		out.Bots = new(botRuleJSON(*b.Bots))
	}
	return out
}

func (b backfillJSON) backfill() *queue.Backfill {
	out := &queue.Backfill{MatchID: b.MatchID, OpenSlots: b.OpenSlots, Region: b.Region,
		Teams: make([]queue.BackfillTeam, len(b.Teams))}
	for i, t := range b.Teams {
		out.Teams[i] = queue.BackfillTeam(t)
	}
	if b.Bots != nil {
		out.Bots = new(queue.BotRule(*b.Bots))
	}
	return out
}

// PublishStats implements queue.Store: an upsert, if the queue exists.
func (s *Store) PublishStats(ctx context.Context, queueName string, st queue.Stats) error {
	b, err := queue.EncodeStats(st)
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "queue: the stats cannot be stored")
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

// LatestStats implements queue.Store.
func (s *Store) LatestStats(ctx context.Context, queueName string) (queue.Stats, bool, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `
SELECT s.stats FROM queue_stats AS s JOIN queues AS q ON q.name = s.queue AND q.deleted_at IS NULL
WHERE s.queue = $1`, queueName).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return queue.Stats{}, false, nil
	}
	if err != nil {
		return queue.Stats{}, false, db.MapError(err, "queue: latest stats")
	}
	st, err := queue.DecodeStats(b)
	if err != nil {
		return queue.Stats{}, false, db.MapError(fmt.Errorf("stored stats of queue %q: %w", queueName, err), "queue: latest stats")
	}
	return st, true, nil
}
