package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The players' standing (queue/penalties.go), by player and context, under the one mutex.

// writeStanding keeps a change's dodges and low-priority games, each in the standing of its
// queue's context. The caller holds the lock.
func (s *Store) writeStanding(c queue.Change) {
	mark := func(ms []queue.PlayerMark, f func(*queue.Standing, queue.PlayerMark)) {
		for _, m := range ms {
			if q := s.queues[m.Queue]; q != nil {
				s.updateStanding(queue.StandingContext(q.def), m.Player, func(st *queue.Standing) bool { f(st, m); return true })
			}
		}
	}
	mark(c.Dodges, func(st *queue.Standing, m queue.PlayerMark) {
		st.AddDodges(queue.Dodge{At: c.At, Queue: m.Queue, Match: m.Match})
	})
	mark(c.LowPriority, func(st *queue.Standing, _ queue.PlayerMark) { st.PlayLowPriority() })
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
	s.updateStanding(contextKey, player, change)
	return nil
}

// updateStanding is UpdateStanding under the lock, which the caller holds: change is given a
// copy, so that what it does without reporting true is not kept.
func (s *Store) updateStanding(contextKey, player string, change func(*queue.Standing) bool) {
	st := queue.Standing{Context: contextKey, Player: player}
	if old, ok := s.standing[player][contextKey]; ok {
		st = old.Clone()
	}
	switch changed := change(&st); {
	case st.Empty():
		delete(s.standing[player], contextKey)
		if len(s.standing[player]) == 0 {
			delete(s.standing, player)
		}
	case changed:
		if s.standing[player] == nil {
			s.standing[player] = make(map[string]queue.Standing)
		}
		s.standing[player][contextKey] = st
	}
}
