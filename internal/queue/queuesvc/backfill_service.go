package queuesvc

import (
	"cmp"
	"context"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// A backfill's creation by the Service (what a backfill is, and its checks, are queue/backfill.go's).

// CreateBackfill validates a backfill request against its queue, resolves its players'
// ratings, and stores the backfill ticket searching. The match's players are the ticket's
// players: none of them may be searching in the queue (a Conflict naming
// teams[i].players[j].id), and none can start searching until the backfill ends. At every
// tick the leader serves backfill tickets first (see matchmaker/tick): joiners go to the team
// the late-joiner rule (teams.Assign) chooses among the teams with open slots. Faults name the
// fields of the request's body: match_id, teams[i].players[j].id, open_slots[i], region,
// bots.mean_rating, ttl_s...
func (s *Service) CreateBackfill(ctx context.Context, nb queue.NewBackfill) (_ queue.Ticket, _ bool, err error) {
	if err := ratings.ValidateName(nb.Queue); err != nil {
		return queue.Ticket{}, false, apperr.Field("name", "%s", err)
	}
	if nb.IdempotencyKey != "" {
		if err := ratings.ValidateID(nb.IdempotencyKey); err != nil {
			return queue.Ticket{}, false, apperr.Field("Idempotency-Key", "%s", err)
		}
	}
	ctx, end := s.createContext(ctx)
	defer end(&err)
	q, err := s.definition(ctx, nb.Queue)
	if err != nil {
		return queue.Ticket{}, false, err
	}
	if err := checkGameType(ctx, q); err != nil {
		return queue.Ticket{}, false, err
	}
	if err := nb.Validate(q); err != nil {
		return queue.Ticket{}, false, err
	}
	var all []queue.NewPlayer
	b := &queue.Backfill{MatchID: nb.MatchID, OpenSlots: slices.Clone(nb.OpenSlots), Region: nb.Region, Bots: nb.Bots,
		Teams: make([]queue.BackfillTeam, len(nb.Teams))}
	for i, t := range nb.Teams {
		all = append(all, t.Players...)
		b.Teams[i].Players = make([]string, len(t.Players))
		for j, p := range t.Players {
			b.Teams[i].Players[j] = p.ID
		}
		b.Teams[i].Bots = slices.Clone(t.Bots)
	}
	players, err := s.resolveRatings(ctx, q, all)
	if err != nil {
		return queue.Ticket{}, false, err
	}
	// The late-joiner rule weighs teams by their ratings: a stored rating below 0 cannot be
	// placed against (inline ones are refused by validate).
	for _, p := range players {
		if p.Rating < 0 {
			return queue.Ticket{}, false, apperr.Field(nb.PlayerField(p.ID), "has a stored rating below 0 (%g): give one inline", p.Rating)
		}
	}
	now := s.now().UTC()
	t := queue.Ticket{
		ID: queue.NewID("tk-"), Queue: q.Name, Status: queue.Searching, Players: players, Backfill: b, Attributes: nb.Attributes,
		CreatedAt: now, ExpiresAt: now.Add(cmp.Or(nb.TTL, q.TicketTTL)), UpdatedAt: now,
		IdempotencyKey: nb.IdempotencyKey, BodyHash: nb.Fingerprint(), Owner: owner(ctx),
	}
	return s.estimated(ctx)(s.storeTicket(ctx, t, nb.PlayerField))
}
