package queuedb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

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
	// ended is the move of a stored ticket the lifecycle ended as it was created, at at
	// (cancelled matched_elsewhere: create_claims.go); nil: stored searching.
	ended *queue.Transition
	at    time.Time
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
	// It returns the ids of the tickets stored, and where they are (for the lifecycle's
	// cancels: create_claims.go).
	//
	// The planner sees one row in each CTE, whatever the batch's size: the NOT IN subqueries
	// are hashed, where joins between the CTEs were planned as nested loops, quadratic in the
	// batch.
	sqlCreateTickets = `
WITH ticket AS (
    SELECT *
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
                $7::text[], $8::bytea[], $12::text[], $13::text[], $14::text[], $15::bool[])
      AS u(id, queue, players, latencies, created_at, expires_at, idempotency_key, body_hash, backfill, attributes, owner, exclusive)
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
                               idempotency_key, body_hash, changed_xid, backfill, attributes, owner, exclusive)
    SELECT id, queue, 'searching', players::jsonb, latencies::jsonb, created_at, expires_at, created_at,
           idempotency_key, body_hash, pg_current_xact_id(), backfill::jsonb, attributes::jsonb, owner, exclusive
    FROM live
    WHERE id NOT IN (
        SELECT ticket_id FROM claim WHERE (ticket_id, player_id) NOT IN (SELECT ticket_id, player_id FROM claimed)
    )
    ORDER BY queue COLLATE "C", owner COLLATE "C", idempotency_key COLLATE "C", id COLLATE "C"
    ON CONFLICT DO NOTHING
    RETURNING id, ctid, queue
)
SELECT id, ctid, queue FROM stored`

	// The claims of the tickets the batch did not store ($2 of the queues $1, known from the
	// insert's answer) are given back: the rows this transaction inserted (xmin) for them. Sent with the
	// COMMIT, and only when some ticket was not stored: run in every batch, this delete was
	// the database's costliest statement under load (docs/performance.md, "Soak").
	sqlReturnClaims = `
DELETE FROM queue_searching
WHERE queue = ANY($1::text[]) AND ticket_id = ANY($2::text[]) AND xmin = pg_current_xact_id()::xid`
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
			if out.ended != nil {
				out.ended.Apply(&req.t, out.at)
			}
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
		case err == nil:
			stored, err = queue.Replay(stored, t)
			return stored, err == nil, err, false
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
