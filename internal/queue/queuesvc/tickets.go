package queuesvc

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The Service's tickets: creation with the players' ratings, reads and long-polls, cancels,
// matches.

// CreateTicket validates a ticket request against its queue, resolves each player's rating
// (inline, else stored in the queue's context, else the default), and stores the ticket
// searching, committed before it returns. replayed says the Idempotency-Key named a ticket
// made earlier with the same request. Faults name the fields of POST
// /v1/queues/{name}/tickets' body: players[i].id, latencies_ms, ttl_s, ...
func (s *Service) CreateTicket(ctx context.Context, nt queue.NewTicket) (_ queue.Ticket, _ bool, err error) {
	if err := ratings.ValidateName(nt.Queue); err != nil {
		return queue.Ticket{}, false, apperr.Field("name", "%s", err)
	}
	if nt.IdempotencyKey != "" {
		if err := ratings.ValidateID(nt.IdempotencyKey); err != nil {
			return queue.Ticket{}, false, apperr.Field("Idempotency-Key", "%s", err)
		}
	}
	ctx, end := s.createContext(ctx)
	defer end(&err)
	q, err := s.definition(ctx, nt.Queue)
	if err != nil {
		return queue.Ticket{}, false, err
	}
	if err := checkGameType(ctx, q); err != nil {
		return queue.Ticket{}, false, err
	}
	if err := nt.Validate(q); err != nil {
		return queue.Ticket{}, false, err
	}
	if err := s.checkSearchingCap(ctx, q); err != nil {
		return queue.Ticket{}, false, err
	}
	players, err := s.resolveRatings(ctx, q, nt.Players)
	if err != nil {
		return queue.Ticket{}, false, err
	}
	now := s.now().UTC()
	if err := s.applyStanding(ctx, q, players, now); err != nil {
		return queue.Ticket{}, false, err
	}
	ttl := cmp.Or(nt.TTL, q.TicketTTL)
	t := queue.Ticket{
		ID: queue.NewID("tk-"), Queue: q.Name, Status: queue.Searching, Players: players, Latencies: nt.Latencies,
		Attributes: nt.Attributes, CreatedAt: now, ExpiresAt: now.Add(ttl), UpdatedAt: now,
		IdempotencyKey: nt.IdempotencyKey, BodyHash: nt.Fingerprint(), Owner: owner(ctx),
		Exclusive: nt.Exclusive == nil || *nt.Exclusive,
	}
	return s.estimated(ctx)(s.storeTicket(ctx, t, func(player string) string {
		if i := slices.IndexFunc(nt.Players, func(p queue.NewPlayer) bool { return p.ID == player }); i >= 0 {
			return "players[" + strconv.Itoa(i) + "].id"
		}
		return "players"
	}))
}

// storeTicket stores a new ticket; a player already searching is a Conflict naming the field
// fieldOf gives for him.
func (s *Service) storeTicket(ctx context.Context, t queue.Ticket, fieldOf func(player string) string) (queue.Ticket, bool, error) {
	stored, replayed, err := s.store.CreateTicket(ctx, t)
	if err == nil {
		s.notePartition(&stored)
	}
	var se *queue.SearchingError
	if errors.As(err, &se) {
		if holder, gerr := s.store.GetTicket(ctx, se.TicketID); gerr == nil && !mayAccess(ctx, holder) {
			// Another key's ticket: the conflict is told, not which ticket it is.
			msg := "player " + se.PlayerID + " is already searching in this queue, in another API key's ticket"
			return queue.Ticket{}, false, &apperr.Error{Code: apperr.Conflict, Message: msg,
				Fields: []apperr.FieldError{{Field: fieldOf(se.PlayerID), Message: "is already searching in another API key's ticket"}}}
		}
		return queue.Ticket{}, false, &apperr.Error{Code: apperr.Conflict, Message: se.Error(), Err: err,
			Fields: []apperr.FieldError{{Field: fieldOf(se.PlayerID), Message: "is already searching in ticket " + se.TicketID}}}
	}
	var conflict *apperr.Error
	if t.IdempotencyKey != "" && errors.As(err, &conflict) && conflict.Code == apperr.Conflict && len(conflict.Fields) == 0 {
		// The store's other conflict: the key was used for another request.
		return queue.Ticket{}, false, &apperr.Error{Code: apperr.Conflict, Message: conflict.Message, Err: err,
			Fields: []apperr.FieldError{{Field: "Idempotency-Key", Message: "was used for another ticket request"}}}
	}
	if err == nil {
		spanTicket(ctx, stored)
		s.ticketQueues.remember(stored.ID, stored.Queue)
	}
	if err == nil && !replayed {
		s.metrics.ticketCreated(t.Queue)
		if stored.Status == queue.Cancelled && stored.Reason == queue.ReasonMatchedElsewhere { // a player's claim is live
			s.metrics.Claims(t.Queue, queue.TickCommitted{Elsewhere: map[string]int{t.Queue: 1}})
		}
		if t.Backfill != nil {
			s.metrics.backfillCreated(t.Queue)
		}
	}
	return stored, replayed, err
}

// resolveRatings gives each player its inline rating, else its stored one in the queue's
// context (a weight on the matchmaking scale), else the default.
func (s *Service) resolveRatings(ctx context.Context, q queue.Queue, in []queue.NewPlayer) ([]queue.Player, error) {
	out := make([]queue.Player, len(in))
	var ask []ratings.Participant
	var where []int
	for i, p := range in {
		out[i] = queue.Player{ID: p.ID, Rating: ratings.DefaultMatchRating, Source: queue.RatingDefault, Roles: p.Roles, Avoid: p.Avoid}
		if p.Rating != nil {
			out[i].Rating, out[i].Source = *p.Rating, queue.RatingInline
			continue
		}
		ask = append(ask, ratings.Participant{ID: p.ID})
		where = append(where, i)
	}
	if len(ask) == 0 {
		return out, nil
	}
	c, err := s.ratings.Context(ctx, q.GameType, q.Mutators)
	if err != nil {
		return nil, err
	}
	weights, err := s.ratings.Weights(ctx, c, ask)
	if err != nil {
		return nil, err
	}
	for k, w := range weights {
		if w.Rated {
			out[where[k]].Rating, out[where[k]].Source = w.Value*ratings.MatchRatingScale, queue.RatingStored
		}
	}
	return out, nil
}

// GetTicket returns a ticket. With wait > 0 and the ticket searching, it waits until the
// ticket's status changes or wait passes (at most MaxWait), then answers what it is. A
// searching ticket carries its EstimatedWait.
func (s *Service) GetTicket(ctx context.Context, id string, wait time.Duration) (queue.Ticket, error) {
	return s.GetTicketWhile(ctx, id, wait, "")
}

// GetTicketWhile is GetTicket whose wait lasts while the ticket's status is known, the status
// the caller last saw (GET /v1/tickets/{id}?status=): a ticket already in another is answered
// at once. A caller that knows nothing waits for a change from the status the ticket has when
// the request comes (known ""); one that follows a ticket from answer to answer must say
// what it saw, or a change between two requests (searching to proposed, which needs its
// answer before accept_by) would hold the next until the change after.
func (s *Service) GetTicketWhile(ctx context.Context, id string, wait time.Duration, known queue.Status) (queue.Ticket, error) {
	t, err := s.getTicket(ctx, id, wait, known)
	if err == nil && !mayRead(ctx, t) {
		return queue.Ticket{}, noTicket(id)
	}
	if err == nil {
		s.estimate(ctx, &t)
	}
	return t, err
}

func (s *Service) getTicket(ctx context.Context, id string, wait time.Duration, known queue.Status) (queue.Ticket, error) {
	if err := ratings.ValidateID(id); err != nil {
		return queue.Ticket{}, apperr.Field("id", "%s", err)
	}
	queueName, ok := s.ticketQueues.lookup(id)
	if !ok {
		// A ticket made on another replica: while this one follows a single queue (most
		// deployments have few), that is the likely one, and a right guess saves a read.
		queueName, ok = s.feeds.OnlyQueue()
	}
	var t queue.Ticket
	var err error
	if ok && wait > 0 {
		// The queue is known or guessed: the watch starts before the one read of the ticket.
		var done bool
		if t, err, done = s.waitInQueue(ctx, id, queueName, wait, known, true); done {
			return t, err
		}
	}
	switch {
	case t.ID == "":
		t, err = s.readableTicket(ctx, id)
	case !mayRead(ctx, t): // read in another queue than the guess
		return queue.Ticket{}, noTicket(t.ID)
	}
	if err != nil || wait <= 0 || !waitable(t.Status) || known != "" && t.Status != known {
		return t, err
	}
	s.ticketQueues.remember(t.ID, t.Queue)
	if t2, err, done := s.waitInQueue(ctx, id, t.Queue, wait, t.Status, false); done {
		return t2, err
	}
	return t, nil // moved to another queue meanwhile: purged and made again, a new ticket
}

// waitInQueue waits, at most wait, for the next event of ticket id in its queue after a
// status: known, or the one the ticket has when the watch begins. The ticket is read after
// the watch begins: a change before it is in what the read returns, and every later one is
// an event the queue's feed hands the watch, with the ticket. done false: the ticket is not
// in that queue (t is the ticket as read), or guessed (a remembered queue, or the one this
// replica follows) names a queue whose feed cannot start (it was deleted): the caller reads
// the ticket to learn its queue.
func (s *Service) waitInQueue(ctx context.Context, id, queueName string, wait time.Duration, known queue.Status, guessed bool) (_ queue.Ticket, _ error, done bool) {
	wctx, cancel := context.WithTimeout(ctx, min(wait, s.cfg.MaxWait))
	defer cancel()
	f, err := s.feeds.Acquire(wctx, queueName)
	switch {
	case err != nil && ctx.Err() == nil && wctx.Err() != nil:
		t, err := s.readableTicket(ctx, id)
		return t, err, true
	case err != nil && guessed && ctx.Err() == nil:
		return queue.Ticket{}, nil, false
	case err != nil:
		return queue.Ticket{}, err, true
	}
	defer s.feeds.Release(f)
	watch := s.feeds.WatchTicket(f, id)
	defer s.feeds.Unwatch(f, id, watch)
	t, err := s.store.GetTicket(ctx, id)
	switch {
	case err != nil:
		return t, err, true
	case t.Queue != queueName:
		return t, nil, false // the caller waits in its queue, from this read
	case !mayRead(ctx, t):
		return queue.Ticket{}, noTicket(t.ID), true
	case !waitable(t.Status) || known != "" && t.Status != known:
		return t, nil, true
	}
	select {
	case <-watch.Done:
		if watch.Read {
			return watch.Ticket.Clone(), nil, true // shared by the ticket's long-polls
		}
	case <-wctx.Done():
		if ctx.Err() != nil {
			return queue.Ticket{}, apperr.Wrap(apperr.Unavailable, ctx.Err(), "the request ended while waiting"), true
		}
		return t, nil, true // the feed brought no event of the ticket: as read after the watch began
	}
	t, err = s.store.GetTicket(ctx, id)
	return t, err, true
}

// CancelTicket cancels a searching ticket (a cancelled one stays so; a matched one is a
// Conflict).
func (s *Service) CancelTicket(ctx context.Context, id string) (queue.Ticket, error) {
	if err := ratings.ValidateID(id); err != nil {
		return queue.Ticket{}, apperr.Field("id", "%s", err)
	}
	before, err := s.ownedTicket(ctx, id)
	if err != nil {
		return queue.Ticket{}, err
	}
	t, err := queue.CancelTicket(ctx, s.store, id, s.now().UTC())
	if err == nil && before.Status == queue.Proposed && t.Reason == queue.ReasonCancelled {
		s.metrics.proposalResolved(t.Queue, queue.ProposalDeclined) // the cancel dissolved its proposal
	}
	return t, err
}

// GetMatch returns a match the queue made, as the store has it now: of a match this replica
// kept (matchcache.go), only the connection is read. The match's slices are shared: read
// only.
func (s *Service) GetMatch(ctx context.Context, id string) (queue.Match, error) {
	if err := ratings.ValidateID(id); err != nil {
		return queue.Match{}, apperr.Field("id", "%s", err)
	}
	return s.matchNow(ctx, id)
}

// createContext bounds a creation's work as a whole by Config.CreateTimeout. The returned
// end, deferred with the address of the creation's error, releases the bound and makes the
// bound's passing Unavailable (503, Retry-After) whichever call met it: a store call maps its
// own deadline, but a step between them (the ratings' read from the memory store) would
// return the bare context error, an Internal error to the client.
func (s *Service) createContext(parent context.Context) (context.Context, func(*error)) {
	if s.cfg.CreateTimeout <= 0 {
		return parent, func(*error) {}
	}
	ctx, cancel := context.WithTimeout(parent, s.cfg.CreateTimeout)
	return ctx, func(err *error) {
		cancel()
		if *err != nil && apperr.CodeOf(*err) == apperr.Internal && errors.Is(*err, context.DeadlineExceeded) && parent.Err() == nil {
			*err = apperr.Wrap(apperr.Unavailable, *err, "queue: the creation did not finish within "+s.cfg.CreateTimeout.String())
		}
	}
}
