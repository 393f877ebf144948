package memstore

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The players' claims across queues (internal/queue/lifecycle_claims.go): one per player,
// written by the ticks' changes under the mutex, which is what serializes them.

// readPlayers is what the lifecycle reads of players: each one's claim with its ticket as it
// now is, and his live tickets in every queue. The caller holds the lock.
func (s *Store) readPlayers(players []string) ([]queue.Claim, []queue.TicketState) {
	var claims []queue.Claim
	var live []queue.TicketState
	seen := make(map[string]bool, len(players))
	queues := slices.Sorted(maps.Keys(s.queues))
	for _, p := range players {
		if c, ok := s.claims[p]; ok {
			if mt := s.tickets[c.Ticket]; mt != nil {
				c.Holder = queue.StateOf(&mt.t)
			}
			claims = append(claims, c)
		}
		for _, name := range queues {
			id, ok := s.queues[name].searching[p]
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			mt := s.tickets[id]
			st := queue.StateOf(&mt.t)
			for _, pl := range mt.t.Players {
				st.Players = append(st.Players, pl.ID)
			}
			live = append(live, st)
		}
	}
	return claims, live
}

// EndClaims implements queue.TicketStore.
func (s *Store) EndClaims(ctx context.Context, match string, at time.Time) error {
	if err := s.lock(ctx, "end claims"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for p, c := range s.claims {
		if c.End(match, at) {
			s.claims[p] = c
		}
	}
	return nil
}
