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

// claimsOf is the players' claims, each with its ticket as it now is. The caller holds the
// lock.
func (s *Store) claimsOf(players []string) []queue.Claim {
	var claims []queue.Claim
	for _, p := range players {
		if c, ok := s.claims[p]; ok {
			if mt := s.tickets[c.Ticket]; mt != nil {
				c.Holder = queue.StateOf(&mt.t)
			}
			claims = append(claims, c)
		}
	}
	return claims
}

// created has the lifecycle decide a new ticket's creation (TicketsCreated) from its
// players' claims, which is all that transition reads, and writes what it decided. The
// caller holds the lock.
func (s *Store) created(t *queue.Ticket) error {
	st := queue.NewState(t)
	claims := s.claimsOf(st.Players)
	if len(claims) == 0 {
		return nil // nothing read, nothing for the lifecycle to end
	}
	var l queue.Locked
	l.ReadPlayers(st.Players, claims, nil)
	_, err := s.decide(&l, t.CreatedAt, queue.TicketsCreated{Tickets: []queue.TicketState{st}})
	return err
}

// readPlayers is what the lifecycle reads of players: each one's claim with its ticket as it
// now is, and his live tickets in every queue. The caller holds the lock.
func (s *Store) readPlayers(players []string) ([]queue.Claim, []queue.TicketState) {
	claims := s.claimsOf(players)
	var live []queue.TicketState
	seen := make(map[string]bool, len(players))
	queues := slices.Sorted(maps.Keys(s.queues))
	for _, p := range players {
		for _, name := range queues {
			id, ok := s.queues[name].searching[p]
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			live = append(live, queue.NewState(&s.tickets[id].t))
		}
	}
	return claims, live
}

// EndClaims implements queue.TicketStore.
// Durable or not means the same here: nothing outlives the process.
func (s *Store) EndClaims(ctx context.Context, match string, at time.Time, _ bool) (ended bool, err error) {
	if err := s.lock(ctx, "end claims"); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	for p, c := range s.claims {
		if c.End(match, at) {
			s.claims[p], ended = c, true
		}
	}
	return ended, nil
}
