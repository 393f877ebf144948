package queuesvc

import (
	"context"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// checkSearchingCap refuses a new ticket in a queue at its max_searching, or of a key at
// the queue's max_searching_per_key: 429 naming the cap. The counts are the leader's last
// snapshot (statsOf); a snapshot that cannot be read lets the ticket in: the caps protect
// the leader from floods, they are not exact quotas.
func (s *Service) checkSearchingCap(ctx context.Context, q queue.Queue) error {
	if q.MaxSearching <= 0 && q.MaxSearchingPerKey <= 0 {
		return nil
	}
	st, err := s.statsOf(ctx, q.Name)
	if err != nil {
		return nil
	}
	full := func(field, what string, n, limit int) error {
		return &apperr.Error{Code: apperr.TooManyRequests, Message: "the queue is full: try again later",
			Fields: []apperr.FieldError{{Field: field,
				Message: what + " " + strconv.Itoa(n) + " searching tickets, the cap is " + strconv.Itoa(limit)}}}
	}
	if q.MaxSearching > 0 && st.SearchingTickets >= q.MaxSearching {
		return full("max_searching", "the queue holds", st.SearchingTickets, q.MaxSearching)
	}
	if n := st.SearchingByOwner[owner(ctx)]; q.MaxSearchingPerKey > 0 && n >= q.MaxSearchingPerKey {
		return full("max_searching_per_key", "this API key holds", n, q.MaxSearchingPerKey)
	}
	return nil
}
