package db

// SetBiasShards changes how many rows a bias cell is spread over, for experiments.
func (s *Store) SetBiasShards(n int) { s.shards = n }

// Queued is the number of results waiting for a committer.
func (s *Store) Queued() int {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return len(s.queue.jobs)
}
