package queuedb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Creating tickets: the group commit. Concurrent creations share a transaction, and each
// gets its own answer.

// maxCreateBatch caps how many tickets share a commit: the batch is whatever arrived while
// the previous commit ran, up to this many.
const maxCreateBatch = 256

// createTimeout bounds one batch's transaction when its callers set no earlier deadline; it is
// not any caller's context, since the batch belongs to all of them.
const createTimeout = 10 * time.Second

// createRequest is one CreateTicket call waiting for the committer.
type createRequest struct {
	ctx       context.Context
	t         queue.Ticket
	players   []byte  // the players as stored
	latencies *string // nil: any region
	backfill  *string // nil: an ordinary ticket
	attrs     *string // nil: no attributes
	key       *string // the idempotency key, nil for none
	hash      []byte  // with a key
	done      chan createOutcome
	// state says who answers the call, and so whether a ticket whose caller was told the
	// creation failed must be cancelled: see submit and commitCreates.
	state atomic.Int32
}

// The states of a createRequest. pending -> committing (a batch took it) -> sealed (the batch
// is committing it: its caller waits for the answer, at most commitGrace past its deadline)
// -> answered (the batch sent its outcome). pending or committing -> abandoned (its caller
// gave up first: the batch leaves the ticket out, or deletes it in its transaction); sealed
// -> abandoned (the COMMIT outlived the grace: cancelled once stored, see commitCreates).
const (
	requestPending int32 = iota
	requestCommitting
	requestSealed
	requestAnswered
	requestAbandoned
)

// commitGrace is how long past its deadline a caller waits for the COMMIT of a batch that
// holds its ticket: one round trip, far shorter on a healthy server, and short enough that a
// creation still answers within the store's deadline and half a second.
const commitGrace = 250 * time.Millisecond

// createOutcome is what the batch did with one ticket.
type createOutcome struct {
	stored  bool  // committed
	noQueue bool  // no such queue (or it was deleted)
	err     error // the batch failed
	// Otherwise the ticket was not stored: one of its players, its idempotency key or its id
	// was taken, which the caller finds out (whyTaken).
}

// The statements of one batch, sent in one round trip with BEGIN and COMMIT.
const (
	// A queue's deletion takes FOR UPDATE on its row, which waits for this lock: once a batch
	// has it, its tickets' queues stay live until it commits. It returns their names.
	sqlShareQueues = `
SELECT name FROM queues WHERE name = ANY($1::text[]) AND deleted_at IS NULL
ORDER BY name FOR KEY SHARE`

	// Each ticket of a live queue claims its players' rows in queue_searching; a ticket is
	// stored when it got all of them (and its id and idempotency key are free: ON CONFLICT DO
	// NOTHING covers every unique index). A claim that meets a row another transaction
	// inserted and has not committed waits for it, then takes the row if that transaction
	// rolled back or deleted it. Claims are inserted in one order, (queue, player), in every
	// batch, so that two batches that share players, on two replicas, wait for each other in
	// the same direction. The tickets come after the claims, and meet another batch's only on
	// a unique index: the idempotency key (ids are random). They are inserted in one order
	// too, (queue, owner, idempotency key): in the callers' order, two batches each holding
	// two keys the other also has (a client retrying two creations on two replicas at once,
	// with other players) each took one key and waited for the other's. (A deadlock, which
	// these orders should rule out, is retried all the same.) The batch has no two tickets
	// with a player, an idempotency key or an id in common (splitBatch defers the later one).
	// It returns the ids of the tickets stored.
	//
	// The planner sees one row in each CTE, whatever the batch's size: the NOT IN subqueries
	// are hashed, where joins between the CTEs were planned as nested loops, quadratic in the
	// batch.
	sqlCreateTickets = `
WITH ticket AS (
    SELECT *
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
                $7::text[], $8::bytea[], $12::text[], $13::text[], $14::text[])
      AS u(id, queue, players, latencies, created_at, expires_at, idempotency_key, body_hash, backfill, attributes, owner)
), live AS (
    SELECT ticket.* FROM ticket JOIN queues AS q ON q.name = ticket.queue AND q.deleted_at IS NULL
), claim AS (
    SELECT * FROM unnest($9::text[], $10::text[], $11::text[]) AS p(queue, player_id, ticket_id)
    WHERE p.ticket_id IN (SELECT id FROM live)
), claimed AS (
    INSERT INTO queue_searching (queue, player_id, ticket_id)
    SELECT queue, player_id, ticket_id FROM claim
    ORDER BY queue COLLATE "C", player_id COLLATE "C"
    ON CONFLICT (queue, player_id) DO NOTHING
    RETURNING ticket_id, player_id
), stored AS (
    INSERT INTO queue_tickets (id, queue, status, players, latencies, created_at, expires_at, updated_at,
                               idempotency_key, body_hash, changed_xid, backfill, attributes, owner)
    SELECT id, queue, 'searching', players::jsonb, latencies::jsonb, created_at, expires_at, created_at,
           idempotency_key, body_hash, pg_current_xact_id(), backfill::jsonb, attributes::jsonb, owner
    FROM live
    WHERE id NOT IN (
        SELECT ticket_id FROM claim WHERE (ticket_id, player_id) NOT IN (SELECT ticket_id, player_id FROM claimed)
    )
    ORDER BY queue COLLATE "C", owner COLLATE "C", idempotency_key COLLATE "C", id COLLATE "C"
    ON CONFLICT DO NOTHING
    RETURNING id
)
SELECT id FROM stored`

	// The claims of the tickets the batch did not store ($1, known from the insert's answer)
	// are given back: the rows this transaction inserted (xmin) for them. Sent with the
	// COMMIT, and only when some ticket was not stored: run in every batch, this delete was
	// the statement the database spent most time in under the soak's load.
	sqlReturnClaims = `
DELETE FROM queue_searching WHERE ticket_id = ANY($1::text[]) AND xmin = pg_current_xact_id()::xid`
)

// CreateTicket implements queue.Store. The call joins the committer's next batch and waits
// for its commit. If its context ends first it returns the context's error, and the ticket
// may still be committed with the batch: a retry with the same idempotency key finds it.
// Times are stored to the microsecond; the returned ticket has them so.
func (s *Store) CreateTicket(ctx context.Context, t queue.Ticket) (queue.Ticket, bool, error) {
	req, err := newCreateRequest(ctx, t)
	if err != nil {
		return queue.Ticket{}, false, err
	}
	// A ticket refused for a player whose searching ticket ended meanwhile is tried again.
	for range 3 {
		out, err := s.submit(ctx, req)
		switch {
		case err != nil:
			return queue.Ticket{}, false, err
		case out.stored:
			return req.t, false, nil
		case out.noQueue:
			return queue.Ticket{}, false, noQueue(t.Queue)
		}
		stored, replayed, err, again := s.whyTaken(ctx, req.t)
		if !again {
			return stored, replayed, err
		}
	}
	return queue.Ticket{}, false, apperr.New(apperr.Unavailable, "queue: the players of ticket %q keep changing, try again", t.ID)
}

func newCreateRequest(ctx context.Context, t queue.Ticket) (*createRequest, error) {
	// The batch's SQL counts a ticket's claims to know it got all its players: it needs one
	// or more, each once.
	if len(t.Players) == 0 {
		return nil, apperr.Field("players", "must have at least one player")
	}
	seen := make(map[string]bool, len(t.Players))
	for i, p := range t.Players {
		if seen[p.ID] {
			return nil, apperr.Field(fmt.Sprintf("players[%d].id", i), "is in the ticket twice")
		}
		seen[p.ID] = true
	}
	t.Status = queue.Searching
	t.CreatedAt = t.CreatedAt.Truncate(time.Microsecond)
	t.ExpiresAt = t.ExpiresAt.Truncate(time.Microsecond)
	t.UpdatedAt = t.CreatedAt
	t.Reason, t.Assignment = "", nil
	t.Players = slices.Clone(t.Players)
	ps := make([]ticketPlayerJSON, len(t.Players))
	for i, p := range t.Players {
		ps[i] = ticketPlayerJSON(p)
	}
	req := &createRequest{ctx: ctx, t: t, done: make(chan createOutcome, 1)}
	var err error
	if req.players, err = json.Marshal(ps); err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "queue: the ticket's players cannot be stored")
	}
	if t.Latencies != nil {
		l, err := json.Marshal(t.Latencies)
		if err != nil {
			return nil, apperr.Wrap(apperr.Invalid, err, "queue: the ticket's latencies cannot be stored")
		}
		req.latencies = new(string(l))
		req.t.Latencies = cloneMap(t.Latencies)
	}
	if t.Backfill != nil {
		b, err := json.Marshal(newBackfillJSON(t.Backfill))
		if err != nil {
			return nil, apperr.Wrap(apperr.Invalid, err, "queue: the ticket's backfill cannot be stored")
		}
		req.backfill = new(string(b))
		req.t.Backfill = newBackfillJSON(t.Backfill).backfill() // a copy
	}
	if req.attrs, err = ticketAttributesDoc(t.Attributes); err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "queue: the ticket's attributes cannot be stored")
	}
	if t.IdempotencyKey != "" {
		req.key, req.hash = &req.t.IdempotencyKey, req.t.BodyHash[:]
	}
	return req, nil
}

func cloneMap(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// submit hands req to the committer and waits for its batch, at most until ctx ends: then it
// answers the context's error, and the batch leaves the ticket out or, if it was already
// committing it, cancels it once stored (commitCreates), so that an error always means a
// ticket that will not be matched.
func (s *Store) submit(ctx context.Context, req *createRequest) (createOutcome, error) {
	closed := apperr.New(apperr.Unavailable, "queue: the store is closed")
	req.state.Store(requestPending)
	select {
	case s.creates <- req:
	case <-ctx.Done():
		return createOutcome{}, db.MapError(ctx.Err(), "queue: create ticket")
	case <-s.stop:
		return createOutcome{}, closed
	}
	select {
	case out := <-req.done:
		return out, out.err
	case <-ctx.Done():
		if req.state.CompareAndSwap(requestPending, requestAbandoned) || req.state.CompareAndSwap(requestCommitting, requestAbandoned) {
			return createOutcome{}, db.MapError(ctx.Err(), "queue: create ticket")
		}
		return s.awaitCommit(ctx, req)
	case <-s.committerDone:
		select { // the committer answers before it ends
		case out := <-req.done:
			return out, out.err
		default:
			return createOutcome{}, closed
		}
	}
}

// awaitCommit waits for the answer of the batch that is committing req (sealed) or has
// answered it, past the caller's deadline by at most commitGrace: a COMMIT that takes longer
// leaves the ticket to be cancelled if it turns out stored.
func (s *Store) awaitCommit(ctx context.Context, req *createRequest) (createOutcome, error) {
	grace := time.NewTimer(commitGrace)
	defer grace.Stop()
	select {
	case out := <-req.done:
		return out, out.err
	case <-grace.C:
		if req.state.CompareAndSwap(requestSealed, requestAbandoned) {
			return createOutcome{}, db.MapError(ctx.Err(), "queue: create ticket")
		}
		out := <-req.done // answered meanwhile
		return out, out.err
	}
}

// whyTaken finds out, from what is committed, why t was not stored: the stored ticket of its
// idempotency key (a replay, or a Conflict if the body differs), a searching ticket holding
// one of its players, or a ticket with its id. If none of them is there any more (the
// searching ticket ended since), it says to try again.
func (s *Store) whyTaken(ctx context.Context, t queue.Ticket) (_ queue.Ticket, replayed bool, _ error, again bool) {
	if t.IdempotencyKey != "" {
		stored, err := scanTicket(s.pool.QueryRow(ctx, `SELECT `+ticketColumns+`
FROM queue_tickets AS t WHERE t.queue = $1 AND t.owner = $3 AND t.idempotency_key = $2`, t.Queue, t.IdempotencyKey, t.Owner))
		switch {
		case err == nil && stored.BodyHash == t.BodyHash:
			return stored, true, nil, false
		case err == nil:
			return queue.Ticket{}, false, apperr.New(apperr.Conflict,
				"the Idempotency-Key %q was used for another ticket body", t.IdempotencyKey), false
		case !errors.Is(err, pgx.ErrNoRows):
			return queue.Ticket{}, false, db.MapError(err, "queue: create ticket"), false
		}
	}
	ids := make([]string, len(t.Players))
	for i, p := range t.Players {
		ids[i] = p.ID
	}
	var player, holder string
	err := s.pool.QueryRow(ctx, `
SELECT player_id, ticket_id FROM queue_searching
WHERE queue = $1 AND player_id = ANY($2::text[]) AND ticket_id <> $3
ORDER BY player_id LIMIT 1`, t.Queue, ids, t.ID).Scan(&player, &holder)
	switch {
	case err == nil:
		return queue.Ticket{}, false, queue.ErrSearching(player, holder), false
	case !errors.Is(err, pgx.ErrNoRows):
		return queue.Ticket{}, false, db.MapError(err, "queue: create ticket"), false
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queue_tickets WHERE id = $1)`, t.ID).Scan(&exists); err != nil {
		return queue.Ticket{}, false, db.MapError(err, "queue: create ticket"), false
	}
	if exists {
		return queue.Ticket{}, false, apperr.New(apperr.Conflict, "ticket %q exists", t.ID), false
	}
	return queue.Ticket{}, false, nil, true
}

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
	// The batch ends by the latest of its callers' deadlines: the others have given up by then
	// (and their tickets are cancelled if stored), and no caller is failed by another's.
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
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	n := len(batch)
	var (
		ids, queues, players                    = make([]string, n), make([]string, n), make([]string, n)
		latencies, keys, backfills              = make([]*string, n), make([]*string, n), make([]*string, n)
		attributes, owners                      = make([]*string, n), make([]string, n)
		created, expires                        = make([]time.Time, n), make([]time.Time, n)
		hashes                                  = make([][]byte, n)
		claimQueues, claimPlayers, claimTickets []string
		queueNames                              []string
		live                                    = make(map[string]bool)    // queue names
		stored                                  = make(map[string]bool, n) // ticket ids
	)
	for i, r := range batch {
		t := &r.t
		ids[i], queues[i], players[i] = t.ID, t.Queue, string(r.players)
		latencies[i], keys[i], hashes[i], backfills[i], attributes[i] = r.latencies, r.key, r.hash, r.backfill, r.attrs
		created[i], expires[i], owners[i] = t.CreatedAt, t.ExpiresAt, t.Owner
		for _, p := range t.Players {
			claimQueues = append(claimQueues, t.Queue)
			claimPlayers = append(claimPlayers, p.ID)
			claimTickets = append(claimTickets, t.ID)
		}
		queueNames = append(queueNames, t.Queue)
	}
	slices.Sort(queueNames)
	queueNames = slices.Compact(queueNames)

	var commitSent bool // the COMMIT went out: a failure from then on may hide a commit
	commitErr := db.InTx(ctx, s.work, "queue: create tickets", func(conn *pgxpool.Conn) error {
		clear(live)
		clear(stored)
		commitSent = false
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(sqlShareQueues, queueNames).Query(func(rows pgx.Rows) error {
			var name string
			_, err := pgx.ForEachRow(rows, []any{&name}, func() error {
				live[name] = true
				return nil
			})
			return err
		})
		b.Queue(sqlCreateTickets, ids, queues, players, latencies, created, expires, keys, hashes,
			claimQueues, claimPlayers, claimTickets, backfills, attributes, owners).Query(func(rows pgx.Rows) error {
			var id string
			_, err := pgx.ForEachRow(rows, []any{&id}, func() error {
				stored[id] = true
				return nil
			})
			return err
		})
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		commitSent = true
		// The calls are sealed now and their callers wait for this answer: it gets at least
		// commitGrace, whatever the batch's deadline.
		cctx, cancel := context.WithDeadline(context.Background(), later(deadline, time.Now().Add(commitGrace)))
		defer cancel()
		return commitWithout(cctx, conn, notStored(batch, stored), sealOrLeaveOut(batch, stored))
	})
	if commitErr == nil {
		s.commits.Add(1)
		s.committed.Add(uint64(len(stored)))
	}
	s.answer(batch, commitErr, commitSent, stored, live)
}

// sealOrLeaveOut is the moment a batch decides, before its COMMIT, which of its calls it
// commits: those whose callers still wait are sealed (they now wait for the COMMIT's
// answer); the stored tickets of those who gave up are taken out of stored and returned, for
// the transaction to delete. A creation that answered an error then left nothing behind.
func sealOrLeaveOut(batch []*createRequest, stored map[string]bool) (leftOut []string) {
	for _, r := range batch {
		if r.state.CompareAndSwap(requestCommitting, requestSealed) || r.state.Load() == requestSealed {
			continue
		}
		if stored[r.t.ID] {
			delete(stored, r.t.ID)
			leftOut = append(leftOut, r.t.ID)
		}
	}
	return leftOut
}

// sqlLeaveOut deletes what this transaction wrote for the tickets $1: their claims and rows.
const sqlLeaveOut = `
WITH claims AS (
    DELETE FROM queue_searching WHERE ticket_id = ANY($1::text[]) AND xmin = pg_current_xact_id()::xid
)
DELETE FROM queue_tickets WHERE id = ANY($1::text[]) AND changed_xid = pg_current_xact_id()`

// notStored is the ids of the batch's tickets the insert did not store: their claims, if
// any, go back.
func notStored(batch []*createRequest, stored map[string]bool) (ids []string) {
	for _, r := range batch {
		if !stored[r.t.ID] {
			ids = append(ids, r.t.ID)
		}
	}
	return ids
}

// commitWithout commits the open transaction on conn after giving back the claims of the
// tickets unclaimed, and without the tickets leftOut.
func commitWithout(ctx context.Context, conn *pgxpool.Conn, unclaimed, leftOut []string) error {
	b := &pgx.Batch{}
	if len(unclaimed) > 0 {
		b.Queue(sqlReturnClaims, unclaimed)
	}
	if len(leftOut) > 0 {
		b.Queue(sqlLeaveOut, leftOut)
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
func (s *Store) answer(batch []*createRequest, commitErr error, commitSent bool, stored, live map[string]bool) {
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
			out = createOutcome{stored: stored[r.t.ID], noQueue: !live[r.t.Queue]}
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
