-- The ratings store: the mutator policy, the history of results (with the response each got,
-- for idempotent replays), the ratings per context and the side-bias table.
--
-- Names (ids, game types, mutators, context keys) are compared byte by byte (COLLATE "C"):
-- the service sorts them in Go's byte order, and row locks are taken in that order.

-- +goose Up
CREATE TABLE mutators (
    name       text COLLATE "C" PRIMARY KEY CHECK (name ~ '^[a-z0-9_.-]{1,64}$'),
    status     text NOT NULL DEFAULT 'unknown' CHECK (status IN ('unknown', 'gameplay', 'neutral')),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE matches (
    -- The order in which results were accepted: a rebuild replays them in it.
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    match_id    text COLLATE "C" PRIMARY KEY CHECK (octet_length(match_id) BETWEEN 1 AND 128),
    game_type   text COLLATE "C" NOT NULL CHECK (game_type ~ '^[a-z0-9_.-]{1,64}$'),
    -- The context the result was rated in when it was accepted (a rebuild may re-split it).
    context_key text COLLATE "C" NOT NULL,
    body_hash   bytea NOT NULL CHECK (octet_length(body_hash) = 32),
    -- The whole ratings.Result, enough to rebuild every rating from scratch.
    result      json NOT NULL,
    -- The exact bytes of the first response, returned again on a replay.
    response    bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
-- A typical row (a 5v5's result and response, 2 to 3 kB) is stored as it is: with the default
-- target of 2 kB the toaster compressed every response on insert, CPU spent on every result.
ALTER TABLE matches SET (toast_tuple_target = 8160);
CREATE INDEX matches_game_type_seq ON matches (game_type, seq);

-- Every result updates the rows of its ten-odd participants. No index covers a column that an
-- update changes, and each page keeps room for new versions (fillfactor), so the updates are
-- HOT: no index entry is written, and the old versions are pruned from the page. An index on
-- skill for the leaderboard would make every update write three index entries; it cost 12 to
-- 40 % more database CPU per result in three paired runs of BenchmarkRecordResultPostgres.
-- Without it a leaderboard reads its context's rows: 1.5 ms for 5,000 players, 20 to 30 ms
-- for 100,000.
CREATE TABLE ratings (
    context_key    text COLLATE "C" NOT NULL,
    is_bot         boolean NOT NULL,
    participant_id text COLLATE "C" NOT NULL CHECK (octet_length(participant_id) BETWEEN 1 AND 128),
    game_type      text COLLATE "C" NOT NULL,
    skill          double precision NOT NULL DEFAULT 0,
    side_offset    double precision NOT NULL DEFAULT 0,
    commander      double precision NOT NULL DEFAULT 0,
    skill_g        double precision NOT NULL DEFAULT 0,
    commander_g    double precision NOT NULL DEFAULT 0,
    games          bigint NOT NULL DEFAULT 0 CHECK (games >= 0),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (context_key, is_bot, participant_id),
    CHECK (context_key = game_type OR starts_with(context_key, game_type || '+')),
    -- Finite numbers only ('NaN' sorts above 'Infinity', so it fails these too).
    CHECK (skill > '-Infinity' AND skill < 'Infinity'),
    CHECK (side_offset > '-Infinity' AND side_offset < 'Infinity'),
    CHECK (commander > '-Infinity' AND commander < 'Infinity'),
    CHECK (skill_g >= 0 AND skill_g < 'Infinity'),
    CHECK (commander_g >= 0 AND commander_g < 'Infinity')
) WITH (fillfactor = 70);
-- GET /v1/players/{id}/ratings: a player's contexts. (The leaderboard and the bots' mean use
-- the primary key: a context's players, or its bots, are one range of it.)
CREATE INDEX ratings_player ON ratings (participant_id) WHERE NOT is_bot;

-- One cell of a context's side-bias table (ratings.BiasKey) is the sum of its shards. Every
-- result of a context, side pair, map and size adds to the same cell, so one row per cell would
-- make concurrent results wait for each other's commit: each transaction adds to the shard of
-- its connection instead, and readers sum the shards (db.defaultBiasShards says how many).
-- (With every result on one map, 8 shards
-- against 1 gave 15 to 30 % less database CPU per result in BenchmarkRecordResultPostgres.)
CREATE TABLE bias_cells (
    context_key text COLLATE "C" NOT NULL,
    side_a      text COLLATE "C" NOT NULL,
    side_b      text COLLATE "C" NOT NULL,
    -- map '' with size 0 is the side pair's total over every map and size, kept beside the
    -- cells so that a result reads two short ranges, not the whole pair.
    map         text COLLATE "C" NOT NULL CHECK (octet_length(map) <= 128),
    size        integer NOT NULL CHECK (size >= 0),
    shard       smallint NOT NULL CHECK (shard >= 0),
    game_type   text COLLATE "C" NOT NULL,
    wins        double precision NOT NULL CHECK (wins >= 0),
    games       double precision NOT NULL CHECK (games >= wins AND games < 'Infinity'),
    PRIMARY KEY (context_key, side_a, side_b, map, size, shard),
    CHECK (side_a <= side_b),
    CHECK ((map = '') = (size = 0)),
    CHECK (context_key = game_type OR starts_with(context_key, game_type || '+'))
);

-- +goose Down
DROP TABLE bias_cells;
DROP TABLE ratings;
DROP TABLE matches;
DROP TABLE mutators;
