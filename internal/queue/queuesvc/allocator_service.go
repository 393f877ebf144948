package queuesvc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The allocator's Service side (the allocation body and the connection check are
// queue/allocator.go's; the runner's start of each placement is queueleader/allocator.go's): the
// leader posts each placing match and records the answer, and the studio's backend fails one.

// allocate posts p to the allocator until it answers a connection, p's deadline passes (the
// leader's tick then fails the placement), ctx ends, or leading says this replica no longer
// leads the queue (the new leader places it: the store takes one answer only).
func (s *Service) allocate(ctx context.Context, a queue.Allocator, p queue.Proposal, leading func() bool) {
	log := s.logger.With("queue", p.Match.Queue, "match_id", p.Match.ID)
	ctx, span := s.allocationSpan(ctx, p)
	defer span.End()
	backoff := 250 * time.Millisecond
	for s.now().Before(p.AcceptBy) && leading() {
		connection, err := s.postAllocation(ctx, a, p)
		if err == nil {
			done, err := queue.CompletePlacement(ctx, s.store, p.Match.ID, connection, s.now().UTC())
			switch {
			case err == nil:
				s.placed(done)
			case apperr.CodeOf(err) != apperr.Conflict:
				log.Warn("queue: cannot store the allocator's placement", "err", err)
			}
			return // a Conflict: the studio's backend answered first, or the deadline did
		}
		log.Debug("queue: the allocator did not place the match; trying again", "err", err, "in", backoff)
		t := s.clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.Chan():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// postAllocation sends one allocation request and returns the connection the allocator
// answered.
func (s *Service) postAllocation(ctx context.Context, a queue.Allocator, p queue.Proposal) (json.RawMessage, error) {
	if s.outbound == nil {
		return nil, errNoOutbound
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WebhookTimeout)
	defer cancel()
	return s.outbound.Allocate(ctx, a, p, s.now())
}

// placed counts a placement that made its match, and how long it took (it began PlaceFor
// before its deadline).
func (s *Service) placed(p queue.Proposal) {
	s.metrics.placement(p.Match.Queue, "placed")
	s.metrics.placementTook(p.Match.Queue, p.ResolvedAt.Sub(p.AcceptBy.Add(-p.PlaceFor)))
	s.metrics.Matched(p.Match.Queue, p.Match, nil)
}

// FailPlacement says, for the studio's backend (PUT /v1/matches/{id}/placement with failed),
// that the match being placed cannot be: its players search again, their wait kept, with a
// requeued event whose reason is "placement_failed: " and reason. The caller must own the
// match's tickets (or be an admin); a match not being placed is a Conflict.
func (s *Service) FailPlacement(ctx context.Context, id, reason string) (queue.Proposal, error) {
	var f apperr.Fields
	if err := ratings.ValidateID(id); err != nil {
		f.Add("id", "%s", err)
	}
	if reason == "" || len(reason) > 200 {
		f.Add("failed", "must say why, in 1..200 bytes")
	}
	if err := f.Err(); err != nil {
		return queue.Proposal{}, err
	}
	p, err := s.store.GetProposal(ctx, id)
	if err != nil {
		return queue.Proposal{}, apperr.New(apperr.NotFound, "no match %q", id)
	}
	if err := s.ownsAll(ctx, id, p.Match); err != nil {
		return queue.Proposal{}, err
	}
	done, err := queue.FailPlacement(ctx, s.store, id, queue.ReasonPlacementFailed+": "+reason, s.now().UTC())
	if err == nil {
		s.metrics.placement(done.Match.Queue, "failed")
	}
	return done, err
}

// ownsAll says whether ctx's caller owns every ticket of m (or is an admin): NotFound,
// naming match id, if not.
func (s *Service) ownsAll(ctx context.Context, id string, m queue.Match) error {
	for _, tid := range m.Tickets() {
		if _, err := s.ownedTicket(ctx, tid); apperr.CodeOf(err) == apperr.NotFound {
			return apperr.New(apperr.NotFound, "no match %q", id)
		} else if err != nil {
			return err
		}
	}
	return nil
}
