package queue

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

func (s *MemoryStore) PlaceMatch(ctx context.Context, id string, connection json.RawMessage, at time.Time) (Match, error) {
	if err := ctx.Err(); err != nil {
		return Match{}, apperr.Wrap(apperr.Unavailable, err, "queue store: place match")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.matches[id]
	if !ok {
		return Match{}, apperr.New(apperr.NotFound, "no match %q", id)
	}
	if m.BackfillOf != "" {
		return Match{}, apperr.New(apperr.Conflict, "match %q is a backfill's fill: its players join the running match %q", id, m.BackfillOf)
	}
	m.Connection = slices.Clone(connection)
	s.matches[id] = m
	q := s.queues[m.Queue]
	for _, tid := range m.Tickets() {
		mt, ok := s.tickets[tid]
		if !ok || mt.t.Status != Matched || mt.t.Assignment == nil || mt.t.Assignment.MatchID != id {
			continue
		}
		mt.t.Assignment.Connection = slices.Clone(connection)
		if q != nil {
			s.appendEvent(q, Event{Queue: m.Queue, Type: EventPlaced, TicketID: tid, MatchID: id, Team: mt.t.Assignment.Team, At: at})
		}
	}
	return cloneMatch(m), nil
}
