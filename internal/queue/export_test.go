package queue

import "github.com/prometheus/client_golang/prometheus"

// ProposalsCounter is m's matchmaker_queue_proposals_total, for tests.
func ProposalsCounter(m *Metrics) *prometheus.CounterVec { return m.proposals }

// WatchedTickets is how many tickets long-polls of this replica wait on in queue's feed.
func WatchedTickets(s *Service, queue string) int {
	s.feeds.mu.Lock()
	defer s.feeds.mu.Unlock()
	if f, ok := s.feeds.byQueue[queue]; ok {
		return len(f.watch)
	}
	return 0
}

// RememberTicketQueue makes s believe ticket id is in queue, as a stale memory would.
func RememberTicketQueue(s *Service, id, queue string) { s.ticketQueues.remember(id, queue) }
