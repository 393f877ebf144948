-- Backfill (queue.Backfill): a ticket for a running match that lost players, and the fills
-- the queue made for such tickets.
--
-- A backfill ticket is a queue_tickets row with backfill set; its players are the match's
-- players still in it, claimed in queue_searching like any ticket's (so one of them cannot
-- search in the queue meanwhile, nor can a second backfill name him). A fill is a
-- queue_matches row with backfill_of (the running match's id, which the joiners' assignments
-- carry) and backfill_ticket set. Both columns are read and written whole with their row:
-- no index.

-- queue_stats holds each queue's latest stats snapshot (queue.Stats, GET
-- /v1/queues/{name}/stats), written by the queue's leader every 2 s, read by the other
-- replicas (each caches it for 1 s): a replica that does not lead a queue answers its stats
-- without scanning its tickets. A table of its own rather than a column of queues, whose row
-- ticks and cancels lock.

-- +goose Up
CREATE TABLE queue_stats (
    queue text COLLATE "C" PRIMARY KEY,
    at    timestamptz NOT NULL,
    stats jsonb NOT NULL -- the Go struct's JSON (queue.EncodeStats): a cache, rewritten every few seconds
);
-- {"match_id", "teams": [{"players": [id...], "bots": [rating...]}], "open_slots": [n...],
--  "region", "bots": {"mean_rating", "target_players", "recommended_min", "recommended_max"}}
ALTER TABLE queue_tickets ADD COLUMN backfill jsonb;
ALTER TABLE queue_matches ADD COLUMN backfill_of text COLLATE "C",
                          ADD COLUMN backfill_ticket text COLLATE "C",
                          ADD CHECK ((backfill_of IS NULL) = (backfill_ticket IS NULL));

-- +goose Down
DROP TABLE queue_stats;
ALTER TABLE queue_matches DROP COLUMN backfill_ticket, DROP COLUMN backfill_of;
ALTER TABLE queue_tickets DROP COLUMN backfill;
