-- The players' standing for a queue's penalties (DESIGN, "A player across queues, avoid
-- lists, penalties"; internal/queue/penalties.go): per rating context (the queue's game type
-- and mutators, as ratings.Context.Key writes it) and player, his recent dodges and leaves
-- and the low-priority games he owes. One row a player who did something, written by the
-- change that saw it:
--   dodges: [{"at", "queue", "match_id"}], appended by the ready check's change (the newest
--           100 kept), whichever replica answered it; a cooldown is computed from them when
--           a ticket is created, so no replica keeps a cooldown of its own.
--   leaves: [{"at", "match_id"}], kept by POST /v1/results (once a match), which also sets
--           low_priority_games when they reach the queue's count; leaves_counted is the leave
--           that last did, the leaves up to it paid for.
--   low_priority_games: taken one by one by the match commits of the games played (never
--           below 0).
-- Rows of players who do nothing wrong never exist, so a queue's tickets read nothing for
-- most players (an index lookup that finds no row).

-- +goose Up
CREATE TABLE player_standing (
    context            text COLLATE "C" NOT NULL,
    player             text COLLATE "C" NOT NULL,
    dodges             jsonb NOT NULL DEFAULT '[]',
    leaves             jsonb NOT NULL DEFAULT '[]',
    low_priority_games integer NOT NULL DEFAULT 0 CHECK (low_priority_games >= 0),
    leaves_counted     timestamptz,
    updated_at         timestamptz NOT NULL,
    PRIMARY KEY (context, player)
);
-- GET and DELETE /v1/players/{id}/standing: every context of one player.
CREATE INDEX player_standing_player ON player_standing (player);

-- +goose Down
DROP TABLE player_standing;
