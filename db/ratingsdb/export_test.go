package ratingsdb

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// SetBiasShards changes how many rows a bias cell is spread over, for experiments.
func (s *Store) SetBiasShards(n int) { s.shards = n }

// Queued is the number of results waiting for a committer.
func (s *Store) Queued() int {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return len(s.queue.jobs)
}

// InsertHistory stores results as history alone, as if recorded and rated by nothing: the
// input of a rebuild, written fast (a rebuild's test of 100,000 results).
func (s *Store) InsertHistory(ctx context.Context, rs []ratings.Result) error {
	rows := make([][]any, len(rs))
	for i, r := range rs {
		c, err := ratings.NewContext(r.GameType, nil)
		if err != nil {
			return err
		}
		doc, err := json.Marshal(toDoc(r))
		if err != nil {
			return err
		}
		fp := r.Fingerprint()
		rows[i] = []any{r.MatchID, c.GameType, c.Key(), fp[:], string(doc), []byte("{}")}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"matches"},
		[]string{"match_id", "game_type", "context_key", "body_hash", "result", "response"}, pgx.CopyFromRows(rows))
	return err
}
