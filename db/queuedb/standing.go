package queuedb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The players' standing (00016_player_standing.sql; queue/penalties.go): its reads, its
// update under the row's lock, and what a change writes of it (Change.Dodges and
// Change.LowPriority).

const (
	// sqlQueueContext is a queues row's rating context as ratings.Context.Key writes it (its
	// mutators are stored canonical: sorted, lower case).
	sqlQueueContext = `CASE WHEN cardinality(q.mutators) = 0 THEN q.game_type
    ELSE q.game_type || '+' || array_to_string(q.mutators, ',') END`

	// sqlTrimRecords keeps the newest queue.MaxStandingRecords of a JSON array.
	sqlTrimRecords = `CASE WHEN jsonb_array_length(%[1]s) > 100 THEN jsonb_path_query_array(%[1]s, '$[last - 99 to last]')
    ELSE %[1]s END`

	standingColumns = `context, player, dodges, leaves, low_priority_games, leaves_counted`

	// A change's dodges, each appended to the standing of its player in its queue's
	// context, the rows taken in the order of their keys.
	sqlAppendDodges = `
INSERT INTO player_standing AS s (context, player, dodges, updated_at)
SELECT ` + sqlQueueContext + `, u.player, jsonb_agg(u.doc::jsonb ORDER BY u.n), $4
FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(queue, player, doc, n)
JOIN queues AS q ON q.name = u.queue
GROUP BY 1, 2
ORDER BY 1, 2
ON CONFLICT (context, player) DO UPDATE
SET dodges = %s, updated_at = EXCLUDED.updated_at`

	// A change's low-priority games, each taking one from its player's games left.
	sqlPlayLowPriority = `
UPDATE player_standing AS s
SET low_priority_games = greatest(s.low_priority_games - u.n, 0), updated_at = $3
FROM (SELECT ` + sqlQueueContext + ` AS context, u.player, count(*) AS n
      FROM unnest($1::text[], $2::text[]) AS u(queue, player)
      JOIN queues AS q ON q.name = u.queue
      GROUP BY 1, 2) AS u
WHERE s.context = u.context AND s.player = u.player`
)

var sqlAppendDodgesTrimmed = fmt.Sprintf(sqlAppendDodges, fmt.Sprintf(sqlTrimRecords, "(s.dodges || EXCLUDED.dodges)"))

type (
	dodgeJSON struct {
		At    time.Time `json:"at"`
		Queue string    `json:"queue"`
		Match string    `json:"match_id"`
	}
	leaveJSON struct {
		At    time.Time `json:"at"`
		Match string    `json:"match_id"`
	}
)

// queueStanding queues what c writes of the players' standing.
func queueStanding(b *pgx.Batch, c queue.Change) error {
	if n := len(c.Dodges); n > 0 {
		queues, players, docs := make([]string, n), make([]string, n), make([]string, n)
		for i, d := range c.Dodges {
			doc, err := json.Marshal(dodgeJSON{At: c.At, Queue: d.Queue, Match: d.Match})
			if err != nil {
				return err
			}
			queues[i], players[i], docs[i] = d.Queue, d.Player, string(doc)
		}
		b.Queue(sqlAppendDodgesTrimmed, queues, players, docs, c.At)
	}
	if n := len(c.LowPriority); n > 0 {
		queues, players := make([]string, n), make([]string, n)
		for i, g := range c.LowPriority {
			queues[i], players[i] = g.Queue, g.Player
		}
		b.Queue(sqlPlayLowPriority, queues, players, c.At)
	}
	return nil
}

// scanStanding reads a row of standingColumns.
func scanStanding(row pgx.Row) (queue.Standing, error) {
	var st queue.Standing
	var dodges, leaves []byte
	var counted *time.Time
	if err := row.Scan(&st.Context, &st.Player, &dodges, &leaves, &st.LowPriorityGames, &counted); err != nil {
		return queue.Standing{}, err
	}
	var ds []dodgeJSON
	var ls []leaveJSON
	if err := json.Unmarshal(dodges, &ds); err != nil {
		return queue.Standing{}, fmt.Errorf("stored dodges of %q in %q: %w", st.Player, st.Context, err)
	}
	if err := json.Unmarshal(leaves, &ls); err != nil {
		return queue.Standing{}, fmt.Errorf("stored leaves of %q in %q: %w", st.Player, st.Context, err)
	}
	for _, d := range ds {
		st.Dodges = append(st.Dodges, queue.Dodge{At: d.At, Queue: d.Queue, Match: d.Match})
	}
	for _, l := range ls {
		st.Leaves = append(st.Leaves, queue.Leave{At: l.At, Match: l.Match})
	}
	if counted != nil {
		st.LeavesCounted = *counted
	}
	return st, nil
}

// Standings implements queue.Store: in every context, by the players' index; in one, by the
// primary key.
func (s *Store) Standings(ctx context.Context, contextKey string, players []string) ([]queue.Standing, error) {
	sql, args := `SELECT `+standingColumns+` FROM player_standing WHERE player = ANY($1::text[]) ORDER BY context, player`, []any{players}
	if contextKey != "" {
		sql, args = `SELECT `+standingColumns+` FROM player_standing
WHERE context = $1 AND player = ANY($2::text[]) ORDER BY context, player`, []any{contextKey, players}
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, db.MapError(err, "queue: read standings")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.Standing, error) { return scanStanding(r) })
	return out, db.MapError(err, "queue: read standings")
}

// UpdateStanding implements queue.Store: the row is made if it is not there (so that two
// first changes of it queue on its lock), locked, read, changed, and written back (deleted
// when nothing is left in it), in one transaction.
func (s *Store) UpdateStanding(ctx context.Context, contextKey, player string, change func(*queue.Standing) bool) error {
	return db.InTx(ctx, s.pool, "queue: update standing", func(conn *pgxpool.Conn) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `INSERT INTO player_standing (context, player, updated_at) VALUES ($1, $2, now())
ON CONFLICT DO NOTHING`, contextKey, player); err != nil {
			return err
		}
		st, err := scanStanding(tx.QueryRow(ctx, `SELECT `+standingColumns+` FROM player_standing
WHERE context = $1 AND player = $2 FOR UPDATE`, contextKey, player))
		if err != nil {
			return err
		}
		changed := change(&st)
		switch {
		case st.Empty(): // nothing to keep, the row made for the lock included
			_, err = tx.Exec(ctx, `DELETE FROM player_standing WHERE context = $1 AND player = $2`, contextKey, player)
		case changed:
			err = writeStanding(ctx, tx, st)
		}
		if err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

func writeStanding(ctx context.Context, tx pgx.Tx, st queue.Standing) error {
	ds, ls := make([]dodgeJSON, len(st.Dodges)), make([]leaveJSON, len(st.Leaves))
	for i, d := range st.Dodges {
		ds[i] = dodgeJSON{At: d.At, Queue: d.Queue, Match: d.Match}
	}
	for i, l := range st.Leaves {
		ls[i] = leaveJSON{At: l.At, Match: l.Match}
	}
	dodges, err := json.Marshal(ds)
	if err != nil {
		return err
	}
	leaves, err := json.Marshal(ls)
	if err != nil {
		return err
	}
	var counted *time.Time
	if !st.LeavesCounted.IsZero() {
		counted = &st.LeavesCounted
	}
	_, err = tx.Exec(ctx, `UPDATE player_standing
SET dodges = $3::jsonb, leaves = $4::jsonb, low_priority_games = $5, leaves_counted = $6, updated_at = now()
WHERE context = $1 AND player = $2`, st.Context, st.Player, string(dodges), string(leaves), st.LowPriorityGames, counted)
	return err
}
