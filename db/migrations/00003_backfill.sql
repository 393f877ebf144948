-- Backfill (queue.Backfill): a ticket for a running match that lost players, and the fills
-- the queue made for such tickets.
--
-- A backfill ticket is a queue_tickets row with backfill set; its players are the match's
-- players still in it, claimed in queue_searching like any ticket's (so one of them cannot
-- search in the queue meanwhile, nor can a second backfill name him). A fill is a
-- queue_matches row with backfill_of (the running match's id, which the joiners' assignments
-- carry) and backfill_ticket set. Both columns are read and written whole with their row:
-- no index.

-- +goose Up
-- {"match_id", "teams": [{"players": [id...], "bots": [rating...]}], "open_slots": [n...],
--  "region", "bots": {"mean_rating", "target_players", "recommended_min", "recommended_max"}}
ALTER TABLE queue_tickets ADD COLUMN backfill jsonb;
ALTER TABLE queue_matches ADD COLUMN backfill_of text COLLATE "C",
                          ADD COLUMN backfill_ticket text COLLATE "C",
                          ADD CHECK ((backfill_of IS NULL) = (backfill_ticket IS NULL));

-- +goose Down
ALTER TABLE queue_matches DROP COLUMN backfill_ticket, DROP COLUMN backfill_of;
ALTER TABLE queue_tickets DROP COLUMN backfill;
