-- Fencing of a queue's leader (db/queuedb/lead.go): each time a process takes a queue's
-- leadership it counts the queue's epoch up by one and remembers the value; every write only
-- the leader makes (a tick's commit, the webhook cursor, the stats) locks or updates the
-- queue's row on the condition that the epoch is still its own. A leader that lost its lock
-- without noticing (its session was ended, another replica leads) has its writes refused
-- instead of racing the new leader's: duplicate webhooks, stats overwritten.
--
-- A constant default: adding the column rewrites nothing.

-- +goose Up
ALTER TABLE queues ADD COLUMN leader_epoch bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE queues DROP COLUMN leader_epoch;
