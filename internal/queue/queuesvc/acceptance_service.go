package queuesvc

import (
	"context"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The ready check's Service side (its types and store are queue/acceptance.go's; the leader's
// proposing and expiring at its ticks are queueleader/acceptance.go's): a player's answer, and the
// count of a resolved proposal.

// Answer records a player's answer to the ready check of match id (POST
// /v1/matches/{id}/acceptance) and returns the proposal as it then is. The caller must own
// the player's ticket (or be an admin): otherwise, as for an unknown proposal or player, it
// is NotFound. An answer to a resolved proposal is a Conflict.
func (s *Service) Answer(ctx context.Context, id, playerID string, accept bool) (queue.Proposal, error) {
	var f apperr.Fields
	if err := ratings.ValidateID(id); err != nil {
		f.Add("id", "%s", err)
	}
	if err := ratings.ValidateID(playerID); err != nil {
		f.Add("player_id", "%s", err)
	}
	if err := f.Err(); err != nil {
		return queue.Proposal{}, err
	}
	p, err := s.store.GetProposal(ctx, id)
	if err != nil {
		return queue.Proposal{}, err
	}
	ticket := ""
	for _, team := range p.Match.Teams {
		for _, pl := range team.Players {
			if pl.ID == playerID {
				ticket = pl.TicketID
			}
		}
	}
	notIn := apperr.New(apperr.NotFound, "no player %q in the proposal of match %q", playerID, id)
	if ticket == "" {
		return queue.Proposal{}, notIn
	}
	if _, err := s.ownedTicket(ctx, ticket); apperr.CodeOf(err) == apperr.NotFound {
		return queue.Proposal{}, notIn
	} else if err != nil {
		return queue.Proposal{}, err
	}
	p, resolved, err := queue.AnswerProposal(ctx, s.store, id, playerID, accept, s.now().UTC())
	if err == nil && resolved {
		s.proposalResolved(p)
	}
	return p, err
}

// proposalResolved counts a resolved ready check or placement (and the match made).
func (s *Service) proposalResolved(p queue.Proposal) {
	switch p.State {
	case queue.ProposalPlacing: // every player accepted: the allocator places it now
		s.metrics.proposalResolved(p.Match.Queue, queue.ProposalAccepted)
	case queue.ProposalFailed:
		s.metrics.placement(p.Match.Queue, "failed")
	default:
		s.metrics.proposalResolved(p.Match.Queue, p.State)
	}
	if p.State == queue.ProposalAccepted {
		s.metrics.Matched(p.Match.Queue, p.Match, nil)
	}
	s.metrics.penalty(p.Match.Queue, "dodge", queue.Dodgers(p))
}
