package queuesvc

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ProposalsCounter is m's matchmaker_queue_proposals_total, for tests.
func ProposalsCounter(m *Metrics) *prometheus.CounterVec { return m.proposals }

// MatchesKept is how many matches s's match cache keeps.
func MatchesKept(s *Service) int { return s.matches.len() }

// WatchedTickets is how many tickets long-polls of this replica wait on in queue's feed.
func WatchedTickets(s *Service, queue string) int { return s.feeds.Watched(queue) }

// FeedWaiters is how many long-polls and streams of this replica use queue's feed.
func FeedWaiters(s *Service, queue string) int { return s.feeds.Waiters(queue) }

// RememberTicketQueue makes s believe ticket id is in queue, as a stale memory would.
func RememberTicketQueue(s *Service, id, queue string) { s.ticketQueues.remember(id, queue) }

// Ticked waits until s has ended a tick of queue that began at at or later (the runner ticks
// at its clock's time), or ctx ends.
func Ticked(ctx context.Context, s *Service, queue string, at time.Time) error {
	for {
		done, ended := s.leaders.TickSince(queue, at)
		if done {
			return nil
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// NextTickEnd is closed when the next tick of queue here ends (its own runner's or one of
// its partitions').
func NextTickEnd(s *Service, queue string) <-chan struct{} {
	_, ended := s.leaders.TickSince(queue, time.Time{}.AddDate(10000, 0, 0))
	return ended
}

// FunctionRejected is the counter of match functions' proposals rejected, by queue and reason.
func FunctionRejected(m *Metrics) *prometheus.CounterVec { return m.fn.rejected }

// ShadowCallDone waits until the last shadow call of queue's runner, if any, has ended (its
// outcome is taken by the next tick), or ctx ends.
func ShadowCallDone(ctx context.Context, s *Service, queue string) error {
	r, ok := s.leaders.Runner(queue)
	if !ok {
		return nil
	}
	return r.ShadowCallDone(ctx)
}

// FunctionCalls is the match functions' calls by outcome.
func FunctionCalls(m *Metrics) *prometheus.CounterVec { return m.fn.calls }

// PenaltiesCounter is m's matchmaker_queue_penalties_total, for tests.
func PenaltiesCounter(m *Metrics) *prometheus.CounterVec { return m.penalties }

// FeedsChanged is closed at the next change of s's feeds: their waiters, watched tickets or
// heads (what WatchedTickets, FeedWaiters and StreamStart read).
func FeedsChanged(s *Service) <-chan struct{} { return s.feeds.NextChange() }
