package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Store keeps the queue's state: queue definitions, tickets, matches and the events of every
// queue, and coordinates the replicas that share it (leadership per queue, event
// notifications). memstore implements it in process; db/queuedb implements it on
// Postgres. Both pass the contract suite in queue/queuetest.
//
// Times are the caller's (the Service's clock), never the store's, so that tests control them.
// Errors are apperr errors: NotFound, Conflict (with the details below), Invalid for a
// malformed argument, Unavailable when the backing database cannot be reached. Methods are
// safe for concurrent use.
type Store interface {
	DefinitionStore
	TicketStore
	LeaderStore
	EventStore
	StatsStore
	PartitionStore
	ChangeStore

	// Ping reports whether the store can be reached; Name says which it is.
	Ping(ctx context.Context) error
	Name() string

	// The ready checks (acceptance.go) and placements (placement.go).
	ProposalStore
	AllocatorStore

	// The players' dodges, leaves and low-priority games (penalties.go).
	StandingStore
}

// StandingStore keeps the players' standing, per context (StandingContext). The dodges and
// low-priority games of a Change are written with it (Change.Dodges, Change.LowPriority):
// each dodge appended to the player's standing in the context of its queue, each game
// taking one from his low-priority games left (never below 0).
type StandingStore interface {
	// Standings returns the standing of those of players that have one, in context (in every
	// context when it is ""), by context and then player.
	Standings(ctx context.Context, contextKey string, players []string) ([]Standing, error)
	// UpdateStanding reads a player's standing in context (with only Context and Player set
	// when he has none), held against every other change of it until it returns, calls
	// change on it, and stores it as change left it when change reports true. A standing
	// left empty (Standing.Empty) is deleted, whatever change reports.
	UpdateStanding(ctx context.Context, contextKey, player string, change func(*Standing) bool) error
}

// DefinitionStore is the part of Store that keeps the queues' definitions.
type DefinitionStore interface {
	// PutQueue creates or replaces the definition of q.Name and returns it as stored, and
	// whether it was created. A replacement keeps CreatedAt; searching tickets stay.
	PutQueue(ctx context.Context, q Queue) (stored Queue, created bool, err error)
	// GetQueue returns a queue's definition; NotFound if there is none.
	GetQueue(ctx context.Context, name string) (Queue, error)
	// ListQueues returns every queue, by name.
	ListQueues(ctx context.Context) ([]Queue, error)
}

// TicketStore is the part of Store a ticket's own calls use: its creation and reads, and the
// match it ends in (its cancel is a change: CancelTicket).
type TicketStore interface {
	// CreateTicket stores t (Status Searching) and has committed it when it returns. With
	// t.IdempotencyKey already used in the queue, it returns the stored ticket and replayed
	// true if t.BodyHash is the same, and a Conflict otherwise. A player of t already in a
	// searching ticket of the queue is a *SearchingError (code Conflict) naming that ticket.
	// A queue that does not exist is NotFound. Concurrent calls may share one commit (group
	// commit); each still gets its own answer.
	CreateTicket(ctx context.Context, t Ticket) (stored Ticket, replayed bool, err error)
	// GetTicket returns a ticket; NotFound if there is none (or it was purged).
	GetTicket(ctx context.Context, id string) (Ticket, error)
	// GetMatch returns a match the queue made; NotFound if there is none.
	GetMatch(ctx context.Context, id string) (Match, error)
	// MatchConnection returns the connection of a match the queue made (nil: not placed),
	// the one part of a match that changes once it is made (PlaceMatch); NotFound if there is
	// no match. A replica that keeps the rest of a match (queuesvc's match cache) reads this.
	MatchConnection(ctx context.Context, id string) (json.RawMessage, error)
	// EndClaims ends at at the claims the players of match hold by it (its result came:
	// lifecycle_claims.go) and says whether it ended any; a match without claims is no
	// error. Not durable, the end may be lost in a crash until the store's next durable
	// commit (a Postgres store's next synchronous commit on the server, of any table); durable,
	// it is kept, and so is every end before it.
	EndClaims(ctx context.Context, match string, at time.Time, durable bool) (ended bool, err error)
}

// LeaderStore is the part of Store the tick loop uses: leadership, the queue's changes, the
// webhook's outbox cursor and the purge (a tick's commit is a change: CommitTick).
type LeaderStore interface {
	// Changes returns the tickets of queue q created or changed since the cursor, and the
	// cursor to pass next time; with part set (q has a PartitionBy), only those whose
	// PartitionOf is part, each partition's runner with its own cursor. The zero cursor
	// returns every searching ticket. A ticket may come back more than once; the caller keeps
	// the searching ones, by id, and drops the others. A ticket that is no longer searching
	// may come with its id, queue, status, times and reason only: no players, latencies,
	// assignment or backfill.
	// It is how the leader keeps its in-memory view without scanning the queue every tick; a
	// partition's runner that read the whole queue's changes read and decoded every
	// partition's tickets once per partition (docs/performance.md, "Partitions").
	Changes(ctx context.Context, q Queue, part string, since Cursor) ([]Ticket, Cursor, error)

	// WebhookCursor and SetWebhookCursor keep, per queue, the Seq of the last event the
	// queue's webhook acknowledged: the events after it are the outbox.
	WebhookCursor(ctx context.Context, queue string) (int64, error)
	SetWebhookCursor(ctx context.Context, queue string, seq int64) error

	// Lead makes this process the queue's leader if no live process is, and reports whether
	// it is the leader now. The leader is the only replica that ticks the queue; leadership
	// ends with the process (its database session), or with Resign. Call it before each tick.
	Lead(ctx context.Context, queue string) (bool, error)
	// Resign gives up the queue's leadership, if held.
	Resign(ctx context.Context, queue string) error

	// Purge deletes what is older than before and no longer needed: finished tickets,
	// matches, and events already past every webhook cursor.
	Purge(ctx context.Context, before time.Time) (PurgeReport, error)
}

// EventStore is the part of Store that event feeds, streams and long-polls read.
type EventStore interface {
	// Events reads the queue's events (a deleted queue's stay readable; no queue is
	// NotFound): up to limit of them with Seq > after, in Seq order, and the newest one's Seq
	// (limit 0 reads the head alone). With tickets, the same read (one round trip) has the
	// tickets of those events as they are now: what a replica's feed reads to wake the
	// long-polls of those tickets, without a second read on the way from a match to them.
	Events(ctx context.Context, queue string, after int64, limit int, tickets bool) (EventPage, error)
	// WaitEvents returns once the queue may have an event with Seq > after (at once if it
	// has one), or when ctx ends (returning its error). Every replica's waiters wake up,
	// whichever replica wrote the event. Spurious wake-ups are allowed.
	WaitEvents(ctx context.Context, queue string, after int64) error
}

// EventPage is what Store.Events read of a queue's events.
type EventPage struct {
	// Events are the events read, each with its ticket's Owner (purged since: none).
	Events []Event
	// Tickets are, when asked for, the tickets of those events as they are now, each once;
	// a ticket purged since is left out.
	Tickets []Ticket
	// Head is the Seq of the queue's newest event (0 when it has none).
	Head int64
}

// StatsStore is the part of Store that shares a queue's stats between replicas.
type StatsStore interface {
	// PublishStats keeps st as the queue's latest stats snapshot (a partition's, when
	// st.Partition is set), replacing the previous one; the queue's (or partition's) leader
	// writes it every StatsPublish so that the other replicas can answer
	// GET /v1/queues/{name}/stats. PublishedStats returns the latest snapshot of each, by
	// Partition (the queue's own, "", first): none when none was published or the queue does
	// not exist.
	PublishStats(ctx context.Context, queue string, st Stats) error
	PublishedStats(ctx context.Context, queue string) ([]Stats, error)
}

// PartitionStore is the part of Store that shares a partitioned queue's partitions out
// (partition.go).
type PartitionStore interface {
	// Partitions lists the partitions of q (which has a PartitionBy): the values of its
	// partition_by attribute among its searching tickets (the attribute's default for a
	// ticket without), and those led before, sorted; and how many replicas share them out
	// now, this one included: 1 for a store of one process.
	Partitions(ctx context.Context, q Queue) (parts []string, replicas int, err error)
}

// Cursor is a position in a queue's changes, opaque to the caller.
type Cursor uint64

// TickWrite is one tick's outcome, as matchmaker/tick returned it and the Service turned
// it into matches and expiries.
type TickWrite struct {
	At      time.Time
	Matches []Match
	Expired []Expiry
	// Waiting says why each ticket left searching waits (kept by the leader, not stored);
	// nil when none does.
	Waiting *Waits
	// Partition is the partition ticked ("": a queue's one): its leader's epoch fences the
	// write.
	Partition string
	// ClaimFor is the queue's ticket_ttl_s: how long after a match is made its exclusive
	// players' claims hold them (lifecycle_claims.go); 0: DefaultTicketTTL.
	ClaimFor time.Duration
}

// Expiry is a searching ticket to expire, and why.
type Expiry struct {
	TicketID string
	Reason   string // "ttl", "no_region", ...
}

// TickCommitted is what a CommitTick made durable.
type TickCommitted struct {
	Matches []string // ids of the matches stored
	Dropped []string // ids of the matches dropped: a ticket was no longer searching
	Expired []string // ids of the tickets expired
	// Claimed counts the matches dropped for a player claimed by another match; Elsewhere
	// the tickets cancelled matched_elsewhere, by their queue.
	Claimed   int
	Elsewhere map[string]int
}

// PurgeReport says how much a Purge deleted.
type PurgeReport struct {
	Tickets, Matches, Events int
}

// SearchingError says which searching ticket holds a player that a new ticket names. The
// store returns it wrapped in an apperr Conflict (ErrSearching); errors.As finds it.
type SearchingError struct {
	PlayerID string
	TicketID string // the searching ticket the player is in
}

func (e *SearchingError) Error() string {
	return "player " + e.PlayerID + " is already searching in ticket " + e.TicketID
}

// Replay is the answer to a new ticket t whose idempotency key already names stored: stored
// again if t's body is the same, else the Conflict of a key used for another body.
func Replay(stored, t Ticket) (Ticket, error) {
	if stored.BodyHash == t.BodyHash {
		return stored, nil
	}
	return Ticket{}, apperr.New(apperr.Conflict, "the Idempotency-Key %q was used for another ticket body", t.IdempotencyKey)
}

// ErrSearching is the Conflict of a new ticket whose player already searches in ticketID.
func ErrSearching(playerID, ticketID string) error {
	e := &SearchingError{PlayerID: playerID, TicketID: ticketID}
	return &apperr.Error{Code: apperr.Conflict, Message: e.Error(), Err: e}
}
