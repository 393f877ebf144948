package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The players' standing (queue/penalties.go), by player and context, under the one mutex.

// standingOf is the player's standing in context, made when he has none. The caller holds
// the lock.
func (s *Store) standingOf(contextKey, player string) *queue.Standing {
	if s.standing[player] == nil {
		s.standing[player] = make(map[string]*queue.Standing)
	}
	st := s.standing[player][contextKey]
	if st == nil {
		st = &queue.Standing{Context: contextKey, Player: player}
		s.standing[player][contextKey] = st
	}
	return st
}

// writeStanding keeps a change's dodges and low-priority games. The caller holds the lock.
func (s *Store) writeStanding(c queue.Change) {
	for _, m := range c.Dodges {
		if q := s.queues[m.Queue]; q != nil {
			s.standingOf(queue.StandingContext(q.def), m.Player).AddDodges(queue.Dodge{At: c.At, Queue: m.Queue, Match: m.Match})
		}
	}
	for _, m := range c.LowPriority {
		if q := s.queues[m.Queue]; q != nil {
			if st := s.standing[m.Player][queue.StandingContext(q.def)]; st != nil {
				st.PlayLowPriority()
			}
		}
	}
}

func (s *Store) Standings(ctx context.Context, contextKey string, players []string) ([]queue.Standing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []queue.Standing
	for _, p := range players {
		for c, st := range s.standing[p] {
			if contextKey == "" || c == contextKey {
				out = append(out, st.Clone())
			}
		}
	}
	slices.SortFunc(out, func(a, b queue.Standing) int {
		return cmp.Or(cmp.Compare(a.Context, b.Context), cmp.Compare(a.Player, b.Player))
	})
	return out, nil
}

func (s *Store) UpdateStanding(ctx context.Context, contextKey, player string, change func(*queue.Standing) bool) error {
	if err := s.lock(ctx, "update standing"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	st := queue.Standing{Context: contextKey, Player: player}
	if old := s.standing[player][contextKey]; old != nil {
		st = old.Clone()
	}
	switch changed := change(&st); {
	case st.Empty():
		delete(s.standing[player], contextKey)
		if len(s.standing[player]) == 0 {
			delete(s.standing, player)
		}
	case changed:
		*s.standingOf(contextKey, player) = st
	}
	return nil
}
