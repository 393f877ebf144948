package queuesvc

import (
	"context"
	"encoding/json"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// A placement by the Service (the types and store are queue/placement.go's).

// Place stores where match id is played (PUT /v1/matches/{id}/placement): on a match being
// placed (a queue with an allocator), it makes the match with that connection, as the
// allocator's answer would; on a match made, it puts the connection on it. The caller must
// own every ticket of the match, or be an admin: otherwise, as for an unknown match, it is
// NotFound. connection must be a JSON object of at most MaxConnectionBytes.
func (s *Service) Place(ctx context.Context, id string, connection json.RawMessage) (queue.Match, error) {
	var f apperr.Fields
	if err := ratings.ValidateID(id); err != nil {
		f.Add("id", "%s", err)
	}
	connection, err := queue.CheckConnection(connection)
	if err != nil {
		f.Add("connection", "%s: where the match's players connect", err)
	}
	if err := f.Err(); err != nil {
		return queue.Match{}, err
	}
	if p, err := s.store.GetProposal(ctx, id); err == nil && p.State == queue.ProposalPlacing {
		if err := s.ownsAll(ctx, id, p.Match); err != nil {
			return queue.Match{}, err
		}
		done, err := queue.CompletePlacement(ctx, s.store, id, connection, s.now().UTC())
		if err != nil {
			return queue.Match{}, err
		}
		s.placed(done)
		return s.store.GetMatch(ctx, id)
	}
	m, err := s.store.GetMatch(ctx, id)
	if err != nil {
		return queue.Match{}, err
	}
	if err := s.ownsAll(ctx, id, m); err != nil {
		return queue.Match{}, err
	}
	return queue.PlaceMatch(ctx, s.store, id, connection, s.now().UTC())
}
