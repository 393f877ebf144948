-- A player across queues (DESIGN, "Several queues at once"; internal/queue/lifecycle_claims.go):
-- a player is in one live match at a time, whichever queues he searches in.
--
-- queue_claims holds, per player, the one match (or proposal) his exclusive ticket was last
-- made or proposed in, written by that tick's commit in its transaction. The primary key is
-- the one claim per player. Only the ticks write claims, and they take
-- pg_advisory_xact_lock(5, 0) before their queue's row (db/queuedb/claims.go), so that what one
-- reads of a claim is what it overwrites: nothing else writes one. A claim is released
-- without a write: it holds while its ticket is still proposed, placing or matched in its
-- match, and at most until until (the queue's ticket_ttl_s after the match could be made);
-- the purge deletes the ended ones.
--
-- queue_tickets.exclusive: a ticket that opts out (false) neither takes nor meets a claim.
-- The tickets stored before this migration are exclusive, as every new one is by default.
-- A column with a constant default: adding it rewrites nothing.
--
-- queue_searching (player_id): a commit finds a claimed player's live tickets in the other
-- queues, to cancel them (matched_elsewhere).

-- +goose Up
CREATE TABLE queue_claims (
    player_id text COLLATE "C" PRIMARY KEY,
    ticket_id text COLLATE "C" NOT NULL,
    match_id  text COLLATE "C" NOT NULL,
    queue     text COLLATE "C" NOT NULL,
    until     timestamptz NOT NULL
);
CREATE INDEX queue_claims_until ON queue_claims (until);
CREATE INDEX queue_claims_match ON queue_claims (match_id); -- a result ends its match's claims
ALTER TABLE queue_tickets ADD COLUMN exclusive boolean NOT NULL DEFAULT true;
CREATE INDEX queue_searching_player ON queue_searching (player_id);

-- +goose Down
DROP INDEX queue_searching_player;
ALTER TABLE queue_tickets DROP COLUMN exclusive;
DROP TABLE queue_claims;
