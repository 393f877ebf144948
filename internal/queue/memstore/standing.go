package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The players' standing (queue/penalties.go), by context and player, under the one mutex.

type standingKey struct{ context, player string }

func cloneStanding(st *queue.Standing) queue.Standing {
	out := *st
	out.Dodges, out.Leaves = slices.Clone(st.Dodges), slices.Clone(st.Leaves)
	return out
}

// standingOf is the player's standing in context, made when he has none. The caller holds
// the lock.
func (s *Store) standingOf(contextKey, player string) *queue.Standing {
	if s.standing == nil {
		s.standing = make(map[standingKey]*queue.Standing)
	}
	k := standingKey{contextKey, player}
	st := s.standing[k]
	if st == nil {
		st = &queue.Standing{Context: contextKey, Player: player}
		s.standing[k] = st
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
			if st := s.standing[standingKey{queue.StandingContext(q.def), m.Player}]; st != nil {
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
		if st := s.standing[standingKey{contextKey, p}]; st != nil {
			out = append(out, cloneStanding(st))
		}
	}
	return out, nil
}

func (s *Store) PlayerStandings(ctx context.Context, player string) ([]queue.Standing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []queue.Standing
	for k, st := range s.standing {
		if k.player == player {
			out = append(out, cloneStanding(st))
		}
	}
	slices.SortFunc(out, func(a, b queue.Standing) int { return cmp.Compare(a.Context, b.Context) })
	return out, nil
}

func (s *Store) UpdateStanding(ctx context.Context, contextKey, player string, change func(*queue.Standing) bool) error {
	if err := s.lock(ctx, "update standing"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	st := queue.Standing{Context: contextKey, Player: player}
	if old := s.standing[standingKey{contextKey, player}]; old != nil {
		st = cloneStanding(old)
	}
	switch changed := change(&st); {
	case st.Empty():
		delete(s.standing, standingKey{contextKey, player})
	case changed:
		*s.standingOf(contextKey, player) = st
	}
	return nil
}

func (s *Store) ClearStanding(ctx context.Context, player string) (int, error) {
	if err := s.lock(ctx, "clear standing"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	for k := range s.standing {
		if k.player == player {
			delete(s.standing, k)
			n++
		}
	}
	return n, nil
}
