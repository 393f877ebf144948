package queuesvc

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The service's use of the players' standing (queue/penalties.go): the check of a new ticket, the
// leaves of a result, and the standing's reads and clearing.

// applyStanding applies the standing of a new ticket's players in q's context when q has
// penalties: a player in a dodge cooldown refuses the ticket (a 429 naming him, and when he
// may search again); one who owes low-priority games is marked so. A queue without
// penalties reads nothing.
func (s *Service) applyStanding(ctx context.Context, q queue.Queue, players []queue.Player, now time.Time) error {
	if !q.Penalties.Any() {
		return nil
	}
	ids := make([]string, len(players))
	for i, p := range players {
		ids[i] = p.ID
	}
	standings, err := s.store.Standings(ctx, queue.StandingContext(q), ids)
	if err != nil {
		return err
	}
	for _, st := range standings {
		i := slices.Index(ids, st.Player)
		if i < 0 {
			continue
		}
		if d := q.Penalties.Dodge; d != nil {
			if until := d.Cooldown(st, now); !until.IsZero() {
				s.metrics.penalty(q.Name, "cooldown_refused", 1)
				return queue.CooldownError("players["+strconv.Itoa(i)+"].id", st.Player, until, now)
			}
		}
		if q.Penalties.LowPriority != nil && st.LowPriorityGames > 0 {
			players[i].LowPriority = true
		}
	}
	return nil
}

// RecordLeaves counts the leaves of a result of match matchID when the queue made it and
// has a low-priority penalty (else nothing): each leaver's leave is kept in his standing in
// the queue's context, and one whose leaves reach the penalty's count is sent to the
// low-priority pool. A result sent again counts nothing more (a leave is kept once a match).
// A result finishes the match, so first its players' claims end (queue/lifecycle_claims.go): they
// may be matched again, in any queue.
func (s *Service) RecordLeaves(ctx context.Context, matchID string, durationS float64, presence map[string]float64) error {
	m, err := s.store.GetMatch(ctx, matchID)
	switch {
	case apperr.CodeOf(err) == apperr.NotFound:
		return nil
	case err != nil:
		return err
	}
	if _, err := s.EndClaimsOf(ctx, m, true); err != nil {
		return err
	}
	return s.CountLeavesOf(ctx, m, durationS, presence)
}

// EndClaimsOf ends now the claims match m's players hold by it and says whether it ended
// any. Unless durable, the end is not flushed on its own (TicketStore.EndClaims): the caller
// commits something after it on the same server, whose flush makes it durable.
func (s *Service) EndClaimsOf(ctx context.Context, m queue.Match, durable bool) (ended bool, err error) {
	return s.store.EndClaims(ctx, m.ID, s.now().UTC(), durable)
}

// CountLeavesOf is RecordLeaves of match m as CheckResult read it, but for the claims, which
// POST /v1/results ends before the result's commit (EndClaimsOf). It reads the match once:
// each read was a database round trip of every result.
func (s *Service) CountLeavesOf(ctx context.Context, m queue.Match, durationS float64, presence map[string]float64) error {
	q, err := s.definition(ctx, m.Queue)
	switch {
	case apperr.CodeOf(err) == apperr.NotFound:
		return nil
	case err != nil:
		return err
	case q.Penalties.LowPriority == nil:
		return nil
	}
	lp, key, now := *q.Penalties.LowPriority, queue.StandingContext(q), s.now().UTC()
	for _, player := range queue.Leavers(m, durationS, presence) {
		sent := false
		err := s.store.UpdateStanding(ctx, key, player, func(st *queue.Standing) bool {
			st.Forget(now)
			var changed bool
			changed, sent = st.AddLeave(lp, m.ID, now)
			return changed
		})
		if err != nil {
			return err
		}
		if sent {
			s.metrics.penalty(q.Name, "low_priority_sent", 1)
		}
	}
	return nil
}

// PlayerStanding is a player's standing in one context as GET /v1/players/{id}/standing
// shows it: with the cooldown he is in now (the longest of the context's queues with a
// dodge penalty; zero: none).
type PlayerStanding struct {
	queue.Standing
	CooldownUntil time.Time
}

// PlayerStandings returns a player's standing in every context he has one in.
func (s *Service) PlayerStandings(ctx context.Context, player string) ([]PlayerStanding, error) {
	if err := ratings.ValidateID(player); err != nil {
		return nil, apperr.Field("id", "%s", err)
	}
	standings, err := s.store.Standings(ctx, "", []string{player})
	if err != nil || len(standings) == 0 {
		return []PlayerStanding{}, err
	}
	queues, err := s.store.ListQueues(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	out := make([]PlayerStanding, len(standings))
	for i, st := range standings {
		out[i].Standing = st
		for _, q := range queues {
			if d := q.Penalties.Dodge; d != nil && queue.StandingContext(q) == st.Context {
				if until := d.Cooldown(st, now); until.After(out[i].CooldownUntil) {
					out[i].CooldownUntil = until
				}
			}
		}
	}
	return out, nil
}

// ClearStanding clears a player's standing in every context (his cooldowns, dodges, leaves
// and low-priority games) and reports in how many he had one.
func (s *Service) ClearStanding(ctx context.Context, player string) (int, error) {
	if err := ratings.ValidateID(player); err != nil {
		return 0, apperr.Field("id", "%s", err)
	}
	standings, err := s.store.Standings(ctx, "", []string{player})
	if err != nil {
		return 0, err
	}
	for _, st := range standings {
		if err := s.store.UpdateStanding(ctx, st.Context, player, func(st *queue.Standing) bool {
			*st = queue.Standing{Context: st.Context, Player: st.Player} // empty: deleted
			return true
		}); err != nil {
			return 0, err
		}
	}
	return len(standings), nil
}
