package queuedb

// CreateStats says how many create transactions the store committed and how many tickets
// they stored.
func (s *Store) CreateStats() (commits, tickets uint64) {
	return s.commits.Load(), s.committed.Load()
}

// UncertainCommits is the number of create batches whose COMMIT went out and never answered.
func (s *Store) UncertainCommits() uint64 { return s.uncertainCommits.Load() }

// QueuedCreates is the number of CreateTicket calls waiting for the committer to take them.
func (s *Store) QueuedCreates() int { return len(s.creates) }

// ListenerPID and LeaderPID are the backends of the store's dedicated sessions (0: none).
func (s *Store) ListenerPID() uint32 { return s.listenerPID.Load() }

func (s *Store) LeaderPID() uint32 {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	if s.lead.conn == nil {
		return 0
	}
	return s.lead.conn.PgConn().PID()
}

// SetListening makes the store's waiters believe the listening connection is up or down, as
// the listener does when its connection fails and comes back, and wakes them.
func (s *Store) SetListening(up bool) {
	s.setListening(up)
}

// Waiters is the number of WaitEvents calls waiting for a notification of the queue.
func (s *Store) Waiters(queueName string) int {
	return s.waiters.Len(queueName)
}

// The statements whose plans a test checks.
const SQLEvents = sqlEvents

const SQLEventTickets = sqlEventTickets

// Listening reports whether the listening connection is up.
func (s *Store) Listening() bool { return s.listening.Load() }

// Epoch is the leader epoch this process holds for the queue (ok false: it never led it).
func (s *Store) Epoch(queueName string) (int64, bool) { return s.lead.epoch(queueName) }

const (
	SQLEndClaims   = sqlEndClaims
	SQLReadClaims  = sqlReadClaims
	SQLWriteClaims = sqlWriteClaims

	SQLEndSearching         = sqlEndSearching
	SQLReturnClaims         = sqlReturnClaims
	SQLLockElsewhereTickets = sqlLockElsewhereTickets
	SQLLockLive             = sqlLockLive
)

// PendingEnds is the number of EndClaims calls waiting for a batch to take them.
func (s *Store) PendingEnds() int {
	s.ends.mu.Lock()
	defer s.ends.mu.Unlock()
	return len(s.ends.pending)
}
