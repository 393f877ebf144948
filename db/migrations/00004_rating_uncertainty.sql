-- What the models with uncertainty need (ratings.Kalman, ratings.WengLin; issue 12):
--  - per rating, the standard deviations of skill, side offset and commander skill
--    (ratings.Rating.Sigma, OffsetSigma, CommanderSigma). 0 means the model's prior: a rating
--    stored before this migration is read as uncertain as a newcomer around its own means;
--  - per bias cell (and shard, and side pair total), the additive statistics from which the
--    models learn their context-wide terms (ratings.Terms): what an average participant is
--    worth over nobody, the mean skill of a newcomer, and the temperature that calibrates the
--    served win probability. Like wins and games they are sums over the matches recorded, so
--    shards add up and concurrent results never wait on each other for them.
--
-- The new columns have constant defaults, so adding them rewrites nothing; the CHECKs scan
-- the tables once. No index covers them: results' updates of ratings stay HOT.
--
-- A rating's numbers other than skill may be NULL, read as 0: the store writes a zero (+0.0)
-- as NULL, which takes no room in the row. Each model leaves several of them at zero (NS2 has
-- no sigmas, the uncertainty models no Adagrad accumulators, and whoever never commands no
-- commander numbers), and every result rewrites ten-odd rating rows to the WAL: the three new
-- columns would have added 24 bytes to each, the NULLs take more than that away
-- (BenchmarkRecordServicePostgres reports the WAL per result; the README has the figures).

-- +goose Up
ALTER TABLE ratings
    ALTER COLUMN side_offset DROP NOT NULL,
    ALTER COLUMN commander DROP NOT NULL,
    ALTER COLUMN skill_g DROP NOT NULL,
    ALTER COLUMN commander_g DROP NOT NULL,
    ADD COLUMN sigma           double precision DEFAULT 0 CHECK (sigma >= 0 AND sigma < 'Infinity'),
    ADD COLUMN offset_sigma    double precision DEFAULT 0 CHECK (offset_sigma >= 0 AND offset_sigma < 'Infinity'),
    ADD COLUMN commander_sigma double precision DEFAULT 0 CHECK (commander_sigma >= 0 AND commander_sigma < 'Infinity');

-- Every rating stored before this migration was learnt by the NS2 model (the only one the
-- service ran), whose uncertainty is the Laplace approximation 1 / sqrt(1 / 2^2 + skill_g)
-- (ratings.NS2.Apply writes it from now on): the veterans' leaderboard places by a
-- conservative estimate do not wait for their next match.
UPDATE ratings SET sigma = 1 / sqrt(0.25 + skill_g) WHERE skill_g > 0;

ALTER TABLE bias_cells
    ADD COLUMN presence        double precision NOT NULL DEFAULT 0 CHECK (presence > '-Infinity' AND presence < 'Infinity'),
    ADD COLUMN presence_weight double precision NOT NULL DEFAULT 0 CHECK (presence_weight >= 0 AND presence_weight < 'Infinity'),
    ADD COLUMN newcomer        double precision NOT NULL DEFAULT 0 CHECK (newcomer > '-Infinity' AND newcomer < 'Infinity'),
    ADD COLUMN newcomer_weight double precision NOT NULL DEFAULT 0 CHECK (newcomer_weight >= 0 AND newcomer_weight < 'Infinity'),
    ADD COLUMN scale           double precision NOT NULL DEFAULT 0 CHECK (scale > '-Infinity' AND scale < 'Infinity'),
    ADD COLUMN scale_weight    double precision NOT NULL DEFAULT 0 CHECK (scale_weight >= 0 AND scale_weight < 'Infinity');

-- +goose Down
ALTER TABLE bias_cells
    DROP COLUMN presence, DROP COLUMN presence_weight, DROP COLUMN newcomer,
    DROP COLUMN newcomer_weight, DROP COLUMN scale, DROP COLUMN scale_weight;
ALTER TABLE ratings DROP COLUMN sigma, DROP COLUMN offset_sigma, DROP COLUMN commander_sigma;
UPDATE ratings SET side_offset = coalesce(side_offset, 0), commander = coalesce(commander, 0),
    skill_g = coalesce(skill_g, 0), commander_g = coalesce(commander_g, 0)
WHERE side_offset IS NULL OR commander IS NULL OR skill_g IS NULL OR commander_g IS NULL;
ALTER TABLE ratings
    ALTER COLUMN side_offset SET NOT NULL,
    ALTER COLUMN commander SET NOT NULL,
    ALTER COLUMN skill_g SET NOT NULL,
    ALTER COLUMN commander_g SET NOT NULL;
