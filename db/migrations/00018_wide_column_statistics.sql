-- No planner statistics for the wide jsonb columns that no statement filters, joins, groups
-- or sorts by: queue_tickets.players and .assignment, queue_matches.teams and .pairs. The
-- planner reads a column's statistics only for a condition on the column itself; the
-- statements read these whole or through an expression (players->0->>'id',
-- assignment->>'match_id'), whose estimates never come from them. ANALYZE spent most of its
-- time on them all the same, sorting and comparing thousands of jsonb values a table (of a
-- soak's queue_tickets' 300 ms of backend CPU an ANALYZE, players and assignment took 270:
-- docs/performance.md, "The throughput table"), and db.AnalyzeGrown and autovacuum analyze
-- these tables over and over as they grow. The other columns keep the default target.
--
-- Catalog changes only: nothing is rewritten or locked for long.

-- +goose Up
ALTER TABLE queue_tickets ALTER COLUMN players SET STATISTICS 0, ALTER COLUMN assignment SET STATISTICS 0;
ALTER TABLE queue_matches ALTER COLUMN teams SET STATISTICS 0, ALTER COLUMN pairs SET STATISTICS 0;

-- +goose Down
ALTER TABLE queue_tickets ALTER COLUMN players SET STATISTICS -1, ALTER COLUMN assignment SET STATISTICS -1;
ALTER TABLE queue_matches ALTER COLUMN teams SET STATISTICS -1, ALTER COLUMN pairs SET STATISTICS -1;
