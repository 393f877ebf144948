package queuedb

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A batch of creations and the players' claims (claims.go; the lifecycle's TicketsCreated):
// an exclusive ticket of a player whose claim is live is stored cancelled matched_elsewhere.
// The batch inserts its tickets first, then takes the ticks' claims lock shared and reads its
// players' claims, in the insert's round trip; it holds the lock to its COMMIT. A tick that
// takes claims holds that lock from before its reads of the players to its COMMIT, so the two
// are ordered: a tick that committed before the batch took the lock has its claims read by
// the batch; one that takes the lock after waits for the batch's COMMIT and reads its tickets
// among the players' live tickets, which it cancels. (A batch's tickets are invisible to a
// tick until that COMMIT, so inserting them before the lock changes neither outcome.) Batches
// share the lock with each other; a batch of tickets that are none exclusive takes no lock
// and reads no claim. The tickets the lifecycle cancels are moved, and their events
// appended, with the COMMIT: no round trip more.
//
// The insert comes before the lock so that the lock is held only from the claims' read to the
// COMMIT: a tick waits for no batch's insert, and a batch's insert (or its wait for another
// transaction's row of its players) runs while a tick holds the lock, not after it. Waiting for
// the lock, the batch holds its new rows and its queues' rows FOR KEY SHARE; a tick that holds
// the lock waits for neither (it locks committed tickets only, and its queues' rows FOR NO KEY
// UPDATE, which KEY SHARE lets through), so no tick waits for a batch that waits for it.
const sqlShareClaimsLock = `SELECT pg_advisory_xact_lock_shared(5, 0)`

// creation is what a batch's transaction decides with the lifecycle: the claims read, and
// the tickets cancelled for them.
type creation struct {
	at      time.Time // the batch's latest creation time: when its tickets become visible
	tickets []queue.TicketState
	players []string // the exclusive tickets' players, whose claims are read
	claims  []queue.Claim
	rows    map[string]lockedRow // the tickets stored, by id: where they are
	ended   map[string]queue.Transition
}

func newCreation(batch []*createRequest) (*creation, error) {
	c := &creation{tickets: make([]queue.TicketState, len(batch))}
	for i, r := range batch {
		c.tickets[i] = queue.NewState(&r.t)
		c.at = later(c.at, r.t.CreatedAt)
	}
	_, need, err := queue.Decide(&queue.Locked{}, c.at, queue.TicketsCreated{Tickets: c.tickets})
	c.players = need.Players
	return c, err
}

// reset starts the transaction's reads afresh (a retry).
func (c *creation) reset() {
	c.claims, c.rows, c.ended = nil, make(map[string]lockedRow), nil
}

// lock queues, after the insert, the claims lock and the read of the players' claims, when
// the batch has exclusive tickets.
func (c *creation) lock(b *pgx.Batch) {
	if len(c.players) == 0 {
		return
	}
	b.Queue(sqlShareClaimsLock)
	b.Queue(sqlReadClaims, c.players).Query(func(rows pgx.Rows) error {
		var err error
		c.claims, err = scanClaims(rows)
		return err
	})
}

// decide has the lifecycle decide the stored tickets' creation, and queues what it changed
// on b, which the COMMIT follows.
func (c *creation) decide(b *pgx.Batch, stored map[string]bool) error {
	if len(c.players) == 0 {
		return nil
	}
	var l queue.Locked
	l.ReadPlayers(c.players, c.claims, nil)
	var cause queue.TicketsCreated
	for _, t := range c.tickets {
		if stored[t.ID] {
			cause.Tickets = append(cause.Tickets, t)
		}
	}
	ch, _, err := queue.Decide(&l, c.at, cause)
	if err != nil || ch.Empty() {
		return err
	}
	c.ended = make(map[string]queue.Transition, len(ch.Transitions))
	for _, tr := range ch.Transitions {
		c.ended[tr.Ticket] = tr
	}
	w := &change{at: c.at, rows: c.rows}
	return w.write(b, ch)
}

// scanClaims reads sqlReadClaims' rows.
func scanClaims(rows pgx.Rows) ([]queue.Claim, error) {
	var out []queue.Claim
	var c queue.Claim
	var status string
	_, err := pgx.ForEachRow(rows, []any{&c.Player, &c.Ticket, &c.Match, &c.Queue, &c.Until,
		&c.Holder.ID, &c.Holder.Queue, &status, &c.Holder.Proposal, &c.Holder.Match}, func() error {
		c.Holder.Status = queue.Status(status)
		out = append(out, c)
		c = queue.Claim{}
		return nil
	})
	return out, err
}
