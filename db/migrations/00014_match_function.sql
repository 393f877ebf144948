-- A queue's match function (DESIGN, "Match functions"): where the leader POSTs the pool at
-- each tick and how it uses the answer, as one JSON document read and written whole with the
-- definition: {"url", "secret", "timeout_ms", "mode" (replace | shadow), "on_failure" (wait |
-- rules), "max_pool"}. NULL: the built-in pass makes the queue's matches. The matches a
-- function proposes are stored as the built-in pass's are: nothing else changes.
--
-- A nullable column: adding it rewrites nothing.

-- +goose Up
ALTER TABLE queues ADD COLUMN match_function jsonb;

-- +goose Down
ALTER TABLE queues DROP COLUMN match_function;
