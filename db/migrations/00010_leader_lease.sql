-- A queue leader's lease (db/queuedb/lead.go). The advisory lock alone kept a hung leader (a
-- stuck goroutine, SIGSTOP, a GC storm: its socket open, its session alive) in place for ever,
-- and nobody ticked its queues. Its leader now renews leader_renewed_at, on the database's
-- clock, as it ticks; a replica that cannot take the lock and finds the lease older than the
-- configured bound ends the lock's session and takes the queue (a new epoch fences the old
-- leader's writes). NULL: no lease (never led, or resigned).
--
-- The webhook outbox changes hands apart from the ticking. A new leader ticks at once (its
-- writes are fenced by the epoch), but the deposed one may still be posting, unaware, until
-- its own lease runs out: webhook_handover_at is when that lease ends (the previous holder's
-- last renewal plus the bound), and webhook_epoch the epoch of the leader that owns the
-- cursor. A new leader claims the outbox (webhook_epoch := its epoch) only from
-- webhook_handover_at on, and a cursor write is refused once the outbox was claimed by a
-- later epoch: the old leader's last acknowledged deliveries are kept, not posted again.
--
-- Nullable columns and a constant default: adding them rewrites nothing.

-- +goose Up
ALTER TABLE queues ADD COLUMN leader_renewed_at timestamptz;
ALTER TABLE queues ADD COLUMN webhook_handover_at timestamptz;
ALTER TABLE queues ADD COLUMN webhook_epoch bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE queues DROP COLUMN webhook_epoch;
ALTER TABLE queues DROP COLUMN webhook_handover_at;
ALTER TABLE queues DROP COLUMN leader_renewed_at;
