-- Ranked (issue 35): time in the model, seasons, their standings, smurfs.
--
-- Per rating (ratings.Rating): when the participant last played (Unix seconds, the idle drift
-- runs from it), the last season reset it had and the games since (placement), and a
-- newcomer's smurf evidence. Like the other numbers but skill, each is NULL when zero (the
-- store writes a zero as NULL, which takes no room in the row; see 00004): most ratings have
-- no season and no evidence. No index covers them, so results' updates stay HOT.
--
-- A season (ratings.Season) is one row per context and name: its definition as JSON (read a
-- few times a second by each replica, never per rating), and its course as columns: the epoch
-- its reset gave the context (0 before), when, the mean it pulled towards, and the last result
-- it came after (matches.seq), where a rebuild applies it again. A result's transaction reads
-- its contexts' reset seasons after it has locked its participants' rows: a rating still
-- behind the latest epoch is reset there, before it is learnt from; the reset's own passes
-- over the context skip the rows such a transaction holds.
--
-- The final standings of a season are kept at its end, a row per ranked player.

-- +goose Up
ALTER TABLE ratings
    ADD COLUMN last_played  bigint CHECK (last_played >= 0),
    ADD COLUMN season       bigint CHECK (season >= 0),
    ADD COLUMN season_games bigint CHECK (season_games >= 0),
    ADD COLUMN surprise     double precision CHECK (surprise >= 0 AND surprise < 'Infinity');

CREATE TABLE seasons (
    context_key text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL CHECK (name ~ '^[A-Za-z0-9_.-]{1,64}$'),
    game_type   text COLLATE "C" NOT NULL,
    starts_at   timestamptz NOT NULL,
    ends_at     timestamptz NOT NULL CHECK (ends_at > starts_at),
    definition  jsonb NOT NULL, -- reset, placement games, tiers
    epoch       bigint NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    reset_at    timestamptz,
    reset_mean  double precision,
    reset_sigma double precision,
    reset_after bigint,
    final_at    timestamptz,
    PRIMARY KEY (context_key, name),
    CHECK (context_key = game_type OR starts_with(context_key, game_type || '+'))
);
CREATE INDEX seasons_game_type ON seasons (game_type);
-- One epoch per reset of a context.
CREATE UNIQUE INDEX seasons_epoch ON seasons (context_key, epoch) WHERE epoch > 0;

CREATE TABLE season_standings (
    context_key text COLLATE "C" NOT NULL,
    season      text COLLATE "C" NOT NULL,
    position    integer NOT NULL CHECK (position >= 1),
    player_id   text COLLATE "C" NOT NULL,
    of_players  integer NOT NULL,
    tier        text NOT NULL,
    score       double precision NOT NULL,
    rating      jsonb NOT NULL, -- ratings.Rating at the season's end
    PRIMARY KEY (context_key, season, position),
    FOREIGN KEY (context_key, season) REFERENCES seasons (context_key, name) ON DELETE CASCADE
);
CREATE INDEX season_standings_player ON season_standings (player_id);

ALTER TABLE rating_tunings
    ADD COLUMN auto boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE rating_tunings DROP COLUMN auto;
DROP TABLE season_standings;
DROP TABLE seasons;
ALTER TABLE ratings DROP COLUMN last_played, DROP COLUMN season, DROP COLUMN season_games, DROP COLUMN surprise;
