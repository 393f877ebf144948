package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The planner's statistics of tables that grow from nothing. pgx prepares every statement
// it runs on a connection, and after five executions Postgres may keep one generic plan for
// it, made from the table statistics of that moment, until they change. A table that grows
// from empty faster than autovacuum first analyzes it (it visits each database once a
// minute, autovacuum_naptime, and analyzes after 10% of the rows changed) keeps plans made
// for a handful of rows: in a fresh database at 1,000 tickets a second the tick's read of
// the players' claims was a hash join over a sequential scan of every ticket (0.3-2.7 s a
// tick, then the tick's deadline; no tick for 10 s), and each result's EndClaims a
// sequential scan of every claim, until the first autoanalyze 30-40 s in (docs/performance.md,
// "The throughput table"). A fresh deployment's first minute of traffic is that soak.
// AnalyzeGrown analyzes the tables that have outgrown their statistics, which replans the
// statements that read them on every connection.

// sqlGrownTables lists the tables of the current schema with at least $1 live rows and at
// least twice the rows their statistics say (never analyzed: -1), that this role may
// analyze (it owns them or the database; another's ANALYZE only warns and changes nothing).
const sqlGrownTables = `
SELECT quote_ident(s.schemaname) || '.' || quote_ident(s.relname)
FROM pg_stat_user_tables AS s JOIN pg_class AS c ON c.oid = s.relid
WHERE s.schemaname = current_schema() AND s.n_live_tup >= greatest($1::float8, 2 * c.reltuples)
  AND (pg_has_role(c.relowner, 'USAGE')
       OR pg_has_role((SELECT datdba FROM pg_database WHERE datname = current_database()), 'USAGE'))
ORDER BY s.relname`

// GrownTableRows is the fewest live rows at which AnalyzeGrown analyzes a table: below it
// any plan reads little.
const GrownTableRows = 1000

// sqlTryAnalyzeRound is the round's claim: every replica runs KeepPlannerStats on the same
// tables, on tickers started within moments of each other, and each listed the grown tables
// before the other's ANALYZE of them committed and then analyzed them again (two replicas
// ran twice the ANALYZEs of one: docs/performance.md, "What a second replica costs"). Taken
// first in the round's transaction, and not waited for: the replica that finds it taken
// skips the round, and its next round finds the statistics the other one made.
const sqlTryAnalyzeRound = `SELECT pg_try_advisory_xact_lock(8, 0)`

// AnalyzeGrown analyzes each table of the current schema that has at least minRows live
// rows and twice the rows its statistics say, and returns those it analyzed: nothing while
// another session runs a round (another replica). A table whose lock it cannot take at once
// (autovacuum is at it) is left for the next call.
func AnalyzeGrown(ctx context.Context, pool *pgxpool.Pool, minRows int) ([]string, error) {
	var analyzed []string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var mine bool
		if err := tx.QueryRow(ctx, sqlTryAnalyzeRound).Scan(&mine); err != nil || !mine {
			return err
		}
		rows, err := tx.Query(ctx, sqlGrownTables, minRows)
		if err != nil {
			return err
		}
		tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '100ms'`, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		for _, table := range tables {
			// A savepoint each: a table whose lock is taken fails its own ANALYZE only.
			err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
				_, err := sp.Exec(ctx, `ANALYZE `+table, pgx.QueryExecModeSimpleProtocol)
				return err
			})
			var pgErr *pgconn.PgError
			switch {
			case errors.As(err, &pgErr) && pgErr.Code == "55P03": // lock_not_available
				continue
			case err != nil:
				return fmt.Errorf("analyze %s: %w", table, err)
			}
			analyzed = append(analyzed, table)
		}
		return nil
	})
	if err != nil {
		return nil, MapError(err, "planner statistics")
	}
	return analyzed, nil
}

// KeepPlannerStats runs AnalyzeGrown every interval until ctx ends; a failure is logged at
// debug level (the next round tries again, and autovacuum still runs).
func KeepPlannerStats(ctx context.Context, pool *pgxpool.Pool, every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		tables, err := AnalyzeGrown(ctx, pool, GrownTableRows)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Debug("planner statistics: will retry", "err", err)
		case len(tables) > 0:
			logger.Debug("planner statistics: analyzed the tables that outgrew them", "tables", tables)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
