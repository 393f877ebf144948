-- A season's soft reset of an ns2-mix context moves both of its beliefs (issue 35): the second
-- (openskill-pl's, ratings.alt_skill) is pulled towards its own players' mean, kept here beside
-- reset_mean so that a rating the bulk reset has not reached yet is reset with the same mean
-- (ratings.CatchUp). NULL for a season reset before it: the mean 0, the second belief's prior.

-- +goose Up
ALTER TABLE seasons
    ADD COLUMN reset_alt_mean double precision CHECK (reset_alt_mean > '-Infinity' AND reset_alt_mean < 'Infinity');

-- +goose Down
ALTER TABLE seasons DROP COLUMN reset_alt_mean;
