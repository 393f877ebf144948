-- The partitions of a queue with partition_by (internal/queue/partition.go): each value is led
-- on its own, under the same session advisory lock and lease as a queue (db/queuedb/lead.go,
-- migrations 00005 and 00010), with the lock keyed by the queue's name and the value, and its
-- epoch and lease here: a row is made when the partition is first led. stats is the
-- partition leader's latest snapshot (a queue's is in queue_stats), the replica's name in it.
-- DeleteQueue deletes a queue's rows with its tombstone's write; no foreign key, as for the
-- queue's other tables (its check would lock the queue's row at every partition's stats).
--
-- A new table: nothing existing is rewritten.

-- +goose Up
CREATE TABLE queue_partitions (
    queue             text NOT NULL,
    value             text NOT NULL,
    leader_epoch      bigint NOT NULL DEFAULT 0,
    leader_renewed_at timestamptz,
    stats_at          timestamptz,
    stats             jsonb,
    PRIMARY KEY (queue, value)
);

-- +goose Down
DROP TABLE queue_partitions;
