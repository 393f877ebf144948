package queue

import (
	"cmp"
	"context"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// A backfill's creation by the Service (what a backfill is, and its checks, are backfill.go's).
//
// The Service's half of a file that held the domain and the Service, split so that the Service
// can leave the domain package (issue 32 item 2) by moving whole files.

// CreateBackfill validates a backfill request against its queue, resolves its players'
// ratings, and stores the backfill ticket searching. The match's players are the ticket's
// players: none of them may be searching in the queue (a Conflict naming
// teams[i].players[j].id), and none can start searching until the backfill ends. At every
// tick the leader serves backfill tickets first (see matchmaker/tick): joiners go to the team
// the late-joiner rule (teams.Assign) chooses among the teams with open slots. Faults name the
// fields of the request's body: match_id, teams[i].players[j].id, open_slots[i], region,
// bots.mean_rating, ttl_s...
func (s *Service) CreateBackfill(ctx context.Context, nb NewBackfill) (_ Ticket, _ bool, err error) {
	if err := ratings.ValidateName(nb.Queue); err != nil {
		return Ticket{}, false, apperr.Field("name", "%s", err)
	}
	if nb.IdempotencyKey != "" {
		if err := ratings.ValidateID(nb.IdempotencyKey); err != nil {
			return Ticket{}, false, apperr.Field("Idempotency-Key", "%s", err)
		}
	}
	ctx, end := s.createContext(ctx)
	defer end(&err)
	q, err := s.definition(ctx, nb.Queue)
	if err != nil {
		return Ticket{}, false, err
	}
	if err := checkGameType(ctx, q); err != nil {
		return Ticket{}, false, err
	}
	if err := nb.validate(q); err != nil {
		return Ticket{}, false, err
	}
	var all []NewPlayer
	b := &Backfill{MatchID: nb.MatchID, OpenSlots: slices.Clone(nb.OpenSlots), Region: nb.Region, Bots: nb.Bots,
		Teams: make([]BackfillTeam, len(nb.Teams))}
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
		return Ticket{}, false, err
	}
	// The late-joiner rule weighs teams by their ratings: a stored rating below 0 cannot be
	// placed against (inline ones are refused by validate).
	for _, p := range players {
		if p.Rating < 0 {
			return Ticket{}, false, apperr.Field(nb.field(p.ID), "has a stored rating below 0 (%g): give one inline", p.Rating)
		}
	}
	now := s.now().UTC()
	t := Ticket{
		ID: newID("tk-"), Queue: q.Name, Status: Searching, Players: players, Backfill: b, Attributes: nb.Attributes,
		CreatedAt: now, ExpiresAt: now.Add(cmp.Or(nb.TTL, q.TicketTTL)), UpdatedAt: now,
		IdempotencyKey: nb.IdempotencyKey, BodyHash: nb.fingerprint(), Owner: owner(ctx),
	}
	return s.estimated(ctx)(s.storeTicket(ctx, t, nb.field))
}
