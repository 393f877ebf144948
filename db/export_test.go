package db

// SetBiasShards changes how many rows a bias cell is spread over, for experiments.
func (s *Store) SetBiasShards(n int) { s.shards = n }
