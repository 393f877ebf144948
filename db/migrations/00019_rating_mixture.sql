-- What the mixture model needs (ratings.Mixture, "ns2-mix"; issue 35): ns2-kalman and
-- openskill-pl both learn from every result, and what is served is their average weighted by
-- how well each has predicted the side pair so far.
--  - per rating, the second model's belief (ratings.Rating.AltSkill, AltSigma), beside the
--    first's in the existing columns; NULL for zero, as in 00004, so that the other models'
--    rows gain nothing;
--  - per bias cell (and shard, and side pair total), two more additive sums for the second
--    model's temperature (alt_scale, alt_scale_weight) and the evidence for the first model
--    over the second (evidence): like the other terms, sums over the matches recorded.
-- Constant defaults: adding the columns rewrites nothing.

-- +goose Up
ALTER TABLE ratings
    ADD COLUMN alt_skill double precision CHECK (alt_skill > '-Infinity' AND alt_skill < 'Infinity'),
    ADD COLUMN alt_sigma double precision CHECK (alt_sigma >= 0 AND alt_sigma < 'Infinity');

ALTER TABLE bias_cells
    ADD COLUMN alt_scale        double precision NOT NULL DEFAULT 0 CHECK (alt_scale > '-Infinity' AND alt_scale < 'Infinity'),
    ADD COLUMN alt_scale_weight double precision NOT NULL DEFAULT 0 CHECK (alt_scale_weight >= 0 AND alt_scale_weight < 'Infinity'),
    ADD COLUMN evidence         double precision NOT NULL DEFAULT 0 CHECK (evidence > '-Infinity' AND evidence < 'Infinity');

-- +goose Down
ALTER TABLE bias_cells DROP COLUMN alt_scale, DROP COLUMN alt_scale_weight, DROP COLUMN evidence;
ALTER TABLE ratings DROP COLUMN alt_skill, DROP COLUMN alt_sigma;
