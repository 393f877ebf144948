-- A context's hyperparameters fitted to its own history (ratings.Tune; `api tune`,
-- POST /v1/ratings/tune): one row per tuned context, replaced as a game type's whole set by
-- every tuning. Read once every few seconds per game type by each replica, never per result,
-- so the parameters and the fit's report are JSON documents as the service writes them.

-- +goose Up
CREATE TABLE rating_tunings (
    context_key text COLLATE "C" PRIMARY KEY,
    game_type   text COLLATE "C" NOT NULL,
    model       text NOT NULL,
    params      jsonb NOT NULL,  -- ratings.TunedParams
    report      jsonb NOT NULL,  -- ratings.TuneReport
    tuned_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (context_key = game_type OR starts_with(context_key, game_type || '+'))
);
CREATE INDEX rating_tunings_game_type ON rating_tunings (game_type);

-- +goose Down
DROP TABLE rating_tunings;
