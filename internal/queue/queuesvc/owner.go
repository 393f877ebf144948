package queuesvc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuefeed"
)

// Caller is who asks the service about tickets: the API key of the request (its name, "" when
// the service runs without keys, so that everything then has one anonymous owner) and
// whether the key has the admin scope. A ticket belongs to the key that created it (DESIGN,
// "Ownership"): only that key, or an admin key, reads it, cancels it or answers its ready
// check; to any other key it does not exist (NotFound, not Forbidden, so that ids cannot be
// probed).
type Caller struct {
	Owner string
	Admin bool
	// Reader: the key has the read scope, an observer's (a dashboard, the console's ticket
	// lookup): it reads every ticket, and acts on none but its own.
	Reader bool
	// GameTypes, when not nil, are the only game types (canonical) whose queues the caller
	// may create tickets and backfills in.
	GameTypes []string
}

// callerRestricted reports whether ctx's caller may use only some game types.
func callerRestricted(ctx context.Context) bool {
	c, _ := callerOf(ctx)
	return c.GameTypes != nil
}

// checkGameType refuses (403 naming game_type) a ticket or backfill in a queue whose game
// type ctx's caller may not use.
func checkGameType(ctx context.Context, q queue.Queue) error {
	c, _ := callerOf(ctx)
	if c.GameTypes == nil || slices.Contains(c.GameTypes, strings.ToLower(q.GameType)) {
		return nil
	}
	return &apperr.Error{Code: apperr.Forbidden,
		Message: fmt.Sprintf("the key %q may not use game type %q, queue %s's", c.Owner, q.GameType, q.Name),
		Fields: []apperr.FieldError{{Field: "game_type", Message: fmt.Sprintf("queue %s's game type %q is not one of the key's (%s)",
			q.Name, q.GameType, strings.Join(c.GameTypes, ", "))}}}
}

type callerKey struct{}

// WithCaller returns ctx carrying the caller: the transports set it for each request. A
// context without one is the service's own (tests, tools): it may see every ticket.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerOf is ctx's caller, and whether it has one.
func callerOf(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// owner is the owner a ticket created under ctx gets.
func owner(ctx context.Context) string {
	c, _ := callerOf(ctx)
	return c.Owner
}

// mayAccess says whether ctx's caller may see and act on t.
func mayAccess(ctx context.Context, t queue.Ticket) bool {
	c, ok := callerOf(ctx)
	return !ok || c.Admin || c.Owner == t.Owner
}

// mayRead says whether ctx's caller may read t: who may act on it, and a read key.
func mayRead(ctx context.Context, t queue.Ticket) bool {
	c, ok := callerOf(ctx)
	return mayAccess(ctx, t) || ok && c.Reader
}

// eventScopeOf is the scope of ctx's caller's stream of ticket's events ("": of every ticket
// the caller may read).
func eventScopeOf(ctx context.Context, ticket string) queuefeed.Scope {
	c, ok := callerOf(ctx)
	if !ok || c.Admin || c.Reader {
		return queuefeed.Scope{All: true, Ticket: ticket}
	}
	return queuefeed.Scope{Owner: c.Owner, Ticket: ticket}
}

// noTicket is the NotFound of a ticket that does not exist or is another key's: the same
// answer for both.
func noTicket(id string) error { return apperr.New(apperr.NotFound, "no ticket %q", id) }

// ownedTicket reads ticket id for ctx's caller: NotFound, as for an unknown id, when the
// caller may not access it.
func (s *Service) ownedTicket(ctx context.Context, id string) (queue.Ticket, error) {
	t, err := s.store.GetTicket(ctx, id)
	if err != nil {
		return queue.Ticket{}, err
	}
	if !mayAccess(ctx, t) {
		return queue.Ticket{}, noTicket(t.ID)
	}
	return t, nil
}

// readableTicket reads ticket id for ctx's caller, as ownedTicket, for reading only.
func (s *Service) readableTicket(ctx context.Context, id string) (queue.Ticket, error) {
	t, err := s.store.GetTicket(ctx, id)
	if err != nil {
		return queue.Ticket{}, err
	}
	if !mayRead(ctx, t) {
		return queue.Ticket{}, noTicket(t.ID)
	}
	return t, nil
}

// waitable says whether a long-poll waits on a ticket of this status: one that will change
// (a placing ticket's next event is its match, or its return to searching).
func waitable(st queue.Status) bool { return st.Live() }
