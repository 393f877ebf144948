package queuedb

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The committer of ticket creations: each batch is what arrived while the previous one was
// committed, in one transaction, and every call in it is answered.

// runCommitter commits the creates: each batch is what arrived while the previous one was
// committed, at most maxCreateBatch. When the store closes it finishes its batch and fails
// the calls still queued.
func (s *Store) runCommitter() {
	defer close(s.committerDone)
	var pending []*createRequest
	for {
		if len(pending) == 0 {
			select {
			case r := <-s.creates:
				pending = append(pending, r)
			case <-s.stop:
				s.failQueued(nil)
				return
			}
		}
	gather:
		for len(pending) < maxCreateBatch {
			select {
			case r := <-s.creates:
				pending = append(pending, r)
			default:
				break gather
			}
		}
		var batch []*createRequest
		batch, pending = splitBatch(pending)
		s.commitCreates(batch)
		select {
		case <-s.stop:
			s.failQueued(pending)
			return
		default:
		}
	}
}

// failQueued answers the calls that will not be committed.
func (s *Store) failQueued(pending []*createRequest) {
	closed := createOutcome{err: apperr.New(apperr.Unavailable, "queue: the store is closed")}
	for _, r := range pending {
		r.done <- closed
	}
	for {
		select {
		case r := <-s.creates:
			r.done <- closed
		default:
			return
		}
	}
}

// splitBatch takes the next batch from pending, in order: at most maxCreateBatch calls whose
// callers still wait, no two of which share a player in a queue, an idempotency key in a
// queue or a ticket id. A call that shares one with an earlier call waits for the next batch,
// which then sees the earlier one committed (or not) and answers it as if the two had come
// one after the other.
func splitBatch(pending []*createRequest) (batch, rest []*createRequest) {
	type key struct{ kind, queue, name string }
	taken := make(map[key]bool)
	for _, r := range pending {
		if r.state.Load() == requestAbandoned {
			continue // its caller has its answer already
		}
		keys := []key{{"id", "", r.t.ID}}
		if r.key != nil {
			keys = append(keys, key{"idempotency", r.t.Queue, r.t.Owner + "\x00" + *r.key})
		}
		for _, p := range r.t.Players {
			keys = append(keys, key{"player", r.t.Queue, p.ID})
		}
		if len(batch) == maxCreateBatch || slices.ContainsFunc(keys, func(k key) bool { return taken[k] }) {
			rest = append(rest, r)
			continue
		}
		for _, k := range keys {
			taken[k] = true
		}
		batch = append(batch, r)
	}
	return batch, rest
}

// commitCreates runs one batch's transaction, again after a deadlock or a serialization
// failure, and answers every call in it.
func (s *Store) commitCreates(batch []*createRequest) {
	batch = slices.DeleteFunc(batch, func(r *createRequest) bool {
		return !r.state.CompareAndSwap(requestPending, requestCommitting) // its caller gave up
	})
	if len(batch) == 0 {
		return
	}
	deadline := batchDeadline(batch)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cols := newCreateColumns(batch)
	live := make(map[string]bool)               // queue names
	stored := make(map[string]bool, len(batch)) // ticket ids
	var commitSent bool                         // the COMMIT went out: a failure from then on may hide a commit
	created, err := newCreation(batch)
	if err != nil {
		s.answer(batch, err, false, stored, live, created)
		return
	}
	commitErr := db.InTx(ctx, s.work, "queue: create tickets", func(conn *pgxpool.Conn) error {
		clear(live)
		clear(stored)
		commitSent = false
		created.reset()
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(sqlShareQueues, cols.queueNames).Query(func(rows pgx.Rows) error {
			var name string
			_, err := pgx.ForEachRow(rows, []any{&name}, func() error {
				live[name] = true
				return nil
			})
			return err
		})
		b.Queue(sqlCreateTickets, cols.args()...).Query(func(rows pgx.Rows) error {
			var id, q string
			var row pgtype.TID
			_, err := pgx.ForEachRow(rows, []any{&id, &row, &q}, func() error {
				stored[id], created.rows[id] = true, lockedRow{row, q}
				return nil
			})
			return err
		})
		created.lock(b) // after the insert: the lock is held from the claims' read to the COMMIT
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		commitSent = true
		// The calls are sealed now and their callers wait for this answer: it gets at least
		// commitGrace, whatever the batch's deadline.
		cctx, cancel := context.WithDeadline(context.Background(), later(deadline, time.Now().Add(commitGrace)))
		defer cancel()
		unclaimed, leftOut := notStored(batch, stored), sealOrLeaveOut(batch, stored)
		return commitWithout(cctx, conn, unclaimed, leftOut, func(b *pgx.Batch) error { return created.decide(b, stored) })
	})
	if commitErr == nil {
		s.commits.Add(1)
		s.committed.Add(uint64(len(stored)))
	}
	s.answer(batch, commitErr, commitSent, stored, live, created)
}

// batchDeadline is when a batch ends: by the latest of its callers' deadlines (the others
// have given up by then, and their tickets are cancelled if stored, so no caller is failed
// by another's), and within createTimeout.
func batchDeadline(batch []*createRequest) time.Time {
	var deadline time.Time
	for _, r := range batch {
		d, ok := r.ctx.Deadline()
		if !ok {
			deadline = time.Time{}
			break
		}
		deadline = later(deadline, d)
	}
	if limit := time.Now().Add(createTimeout); deadline.IsZero() || deadline.After(limit) {
		deadline = limit
	}
	return deadline
}

// createColumns are a batch's tickets and claims as sqlCreateTickets takes them, column by
// column, and the names of their queues.
type createColumns struct {
	ids, queues, players                    []string
	latencies, keys, backfills, attributes  []*string
	owners                                  []string
	exclusive                               []bool
	created, expires                        []time.Time
	hashes                                  [][]byte
	claimQueues, claimPlayers, claimTickets []string
	queueNames                              []string // sorted, each once
}

func newCreateColumns(batch []*createRequest) *createColumns {
	n := len(batch)
	c := &createColumns{ids: make([]string, n), queues: make([]string, n), players: make([]string, n),
		latencies: make([]*string, n), keys: make([]*string, n), backfills: make([]*string, n), attributes: make([]*string, n),
		owners: make([]string, n), created: make([]time.Time, n), expires: make([]time.Time, n), hashes: make([][]byte, n),
		exclusive: make([]bool, n)}
	for i, r := range batch {
		t := &r.t
		c.ids[i], c.queues[i], c.players[i] = t.ID, t.Queue, string(r.players)
		c.latencies[i], c.keys[i], c.hashes[i], c.backfills[i], c.attributes[i] = r.latencies, r.key, r.hash, r.backfill, r.attrs
		c.created[i], c.expires[i], c.owners[i], c.exclusive[i] = t.CreatedAt, t.ExpiresAt, t.Owner, t.Exclusive
		for _, p := range t.Players {
			c.claimQueues = append(c.claimQueues, t.Queue)
			c.claimPlayers = append(c.claimPlayers, p.ID)
			c.claimTickets = append(c.claimTickets, t.ID)
		}
		c.queueNames = append(c.queueNames, t.Queue)
	}
	slices.Sort(c.queueNames)
	c.queueNames = slices.Compact(c.queueNames)
	return c
}

// args are sqlCreateTickets' parameters, in order.
func (c *createColumns) args() []any {
	return []any{c.ids, c.queues, c.players, c.latencies, c.created, c.expires, c.keys, c.hashes,
		c.claimQueues, c.claimPlayers, c.claimTickets, c.backfills, c.attributes, c.owners, c.exclusive}
}

// sealOrLeaveOut is the moment a batch decides, before its COMMIT, which of its calls it
// commits: those whose callers still wait are sealed (they now wait for the COMMIT's
// answer); the stored tickets of those who gave up are taken out of stored and returned, for
// the transaction to delete. A creation that answered an error then left nothing behind.
func sealOrLeaveOut(batch []*createRequest, stored map[string]bool) (leftOut ticketKeys) {
	for _, r := range batch {
		if r.state.CompareAndSwap(requestCommitting, requestSealed) || r.state.Load() == requestSealed {
			continue
		}
		if stored[r.t.ID] {
			delete(stored, r.t.ID)
			leftOut.add(&r.t)
		}
	}
	return leftOut
}

// sqlLeaveOut deletes what this transaction wrote for the tickets $2 (of the queues $1):
// their claims and rows.
const sqlLeaveOut = `
WITH claims AS (
    DELETE FROM queue_searching
    WHERE queue = ANY($1::text[]) AND ticket_id = ANY($2::text[]) AND xmin = pg_current_xact_id()::xid
)
DELETE FROM queue_tickets WHERE id = ANY($2::text[]) AND changed_xid = pg_current_xact_id()`

// ticketKeys are tickets by queue and id, column by column, as queue_searching_ticket
// finds their players' rows.
type ticketKeys struct{ queues, ids []string }

func (k *ticketKeys) add(t *queue.Ticket) {
	k.queues, k.ids = append(k.queues, t.Queue), append(k.ids, t.ID)
}

// notStored is the ids of the batch's tickets the insert did not store: their claims, if
// any, go back.
func notStored(batch []*createRequest, stored map[string]bool) (k ticketKeys) {
	for _, r := range batch {
		if !stored[r.t.ID] {
			k.add(&r.t)
		}
	}
	return k
}

// commitWithout commits the open transaction on conn after giving back the claims of the
// tickets unclaimed, without the tickets leftOut, and with what also queues (the lifecycle's
// cancels of the stored tickets).
func commitWithout(ctx context.Context, conn *pgxpool.Conn, unclaimed, leftOut ticketKeys, also func(*pgx.Batch) error) error {
	b := &pgx.Batch{}
	if len(unclaimed.ids) > 0 {
		b.Queue(sqlReturnClaims, unclaimed.queues, unclaimed.ids)
	}
	if len(leftOut.ids) > 0 {
		b.Queue(sqlLeaveOut, leftOut.queues, leftOut.ids)
	}
	if err := also(b); err != nil {
		return err
	}
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return db.Committed(conn)
}

// answer sends each call of the batch its outcome, then cancels the tickets that may be
// stored though their callers were told the creation failed: those whose callers stopped
// waiting for a COMMIT that outlived commitGrace, and every one of a batch whose COMMIT went
// out and never answered (it may have been carried out). A call with an idempotency key is
// left alone: its retry finds the ticket, as its key promises; one without has no way to,
// and its ticket is cancelled rather than matched.
func (s *Store) answer(batch []*createRequest, commitErr error, commitSent bool, stored, live map[string]bool, created *creation) {
	var pe *pgconn.PgError
	unanswered := commitErr != nil && commitSent && !errors.As(commitErr, &pe)
	if unanswered {
		s.uncertainCommits.Add(1)
	}
	var abandoned []string
	for _, r := range batch {
		out := createOutcome{err: commitErr}
		if commitErr == nil {
			// A queue made between the lock and the insert may have tickets stored: stored wins.
			out = createOutcome{stored: stored[r.t.ID], noQueue: !live[r.t.Queue], at: created.at}
			if tr, ok := created.ended[r.t.ID]; ok {
				out.ended = &tr
			}
		}
		answered := r.state.CompareAndSwap(requestSealed, requestAnswered) || r.state.CompareAndSwap(requestCommitting, requestAnswered)
		if answered {
			r.done <- out
		}
		if r.key == nil && ((!answered && out.stored) || unanswered) {
			abandoned = append(abandoned, r.t.ID)
		}
	}
	if len(abandoned) > 0 {
		s.cancelIfStored(abandoned)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ReasonCreationFailed is the reason of a ticket cancelled because its creation answered an
// error although its batch committed.
const ReasonCreationFailed = "creation_failed"

// cancelIfStored cancels those of ids that are stored and searching although their callers
// were told the creation failed: they gave up while the batch was committing, or the batch's
// answer never came (its deadline ran out during its round trip, or the connection broke) and
// its COMMIT may have been carried out. Such a ticket must not be matched. The callers are
// answered first, so that none waits for this.
func (s *Store) cancelIfStored(ids []string) {
	ctx, cancel := context.WithTimeout(s.bg, 5*time.Second)
	defer cancel()
	var found []string
	err := s.work.QueryRow(ctx, `SELECT coalesce(array_agg(id), '{}') FROM queue_tickets WHERE id = ANY($1) AND status = 'searching'`, ids).Scan(&found)
	if err != nil {
		slog.Warn("queue: cannot check the tickets of a batch whose commit did not answer", "tickets", len(ids), "err", err)
		return
	}
	for _, id := range found {
		if _, err := s.cancelTicket(ctx, id, time.Now(), ReasonCreationFailed); err != nil {
			slog.Warn("queue: a ticket whose creation failed was stored and cannot be cancelled", "ticket_id", id, "err", err)
			continue
		}
		slog.Warn("queue: a ticket whose creation answered an error was stored after all; cancelled it", "ticket_id", id)
	}
}
