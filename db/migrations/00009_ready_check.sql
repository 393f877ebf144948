-- Ownership and the ready check (DESIGN, "Ownership", "Ready check (acceptance)").
--
-- A ticket belongs to the API key that created it: owner is the key's name ('' when the
-- service runs without keys, everything then has one anonymous owner). Idempotency keys are
-- scoped per API key and queue, so the unique index takes the owner.
--
-- A queue's ready check is acceptance_timeout (NULL: none). A proposed ticket carries its
-- proposal (JSON, as the API's, read and written whole with the row) and keeps its rows in
-- queue_searching, so its players cannot search again while the proposal holds them. A
-- proposal lives in queue_proposals with the columns of the match it becomes (copied into
-- queue_matches when every player accepted) and the players' answers; its state changes from
-- open exactly once, under its row lock, which is how two replicas never both resolve it.
-- 'placing' is admitted now for an allocator's placement (DESIGN, "Placement"); a match placed
-- by the studio keeps its connection in queue_matches and its tickets' assignments.
--
-- Adding nullable columns or ones with a constant default rewrites nothing; the new CHECKs
-- scan the tables once.

-- +goose Up
ALTER TABLE queue_tickets ADD COLUMN owner text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE queue_tickets ADD COLUMN proposal jsonb; -- {"match_id", "team", "region", "teams", "accept_by"} while proposed
DROP INDEX queue_tickets_idempotency;
CREATE UNIQUE INDEX queue_tickets_idempotency ON queue_tickets (queue, owner, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
ALTER TABLE queue_tickets DROP CONSTRAINT queue_tickets_status_check;
ALTER TABLE queue_tickets ADD CONSTRAINT queue_tickets_status_check
    CHECK (status IN ('searching', 'proposed', 'placing', 'matched', 'expired', 'cancelled'));
ALTER TABLE queue_tickets ADD CONSTRAINT queue_tickets_proposal_check
    CHECK ((status IN ('proposed', 'placing')) = (proposal IS NOT NULL));

ALTER TABLE queue_events DROP CONSTRAINT queue_events_type_check;
ALTER TABLE queue_events ADD CONSTRAINT queue_events_type_check
    CHECK (type IN ('matched', 'expired', 'cancelled', 'proposed', 'requeued', 'placed'));
ALTER TABLE queue_events DROP CONSTRAINT queue_events_check;
ALTER TABLE queue_events ADD CONSTRAINT queue_events_team_check
    CHECK ((type IN ('matched', 'proposed', 'placed')) = (team IS NOT NULL));
ALTER TABLE queue_events ADD CONSTRAINT queue_events_match_check
    CHECK (type NOT IN ('matched', 'proposed', 'requeued', 'placed') OR match_id IS NOT NULL);

ALTER TABLE queues ADD COLUMN acceptance_timeout interval;
ALTER TABLE queues ADD COLUMN allocator jsonb; -- {"url", "secret", "timeout_ms"}; NULL: none

-- Where a match is played, once placed (an opaque JSON object); its matched tickets carry it
-- in their assignment's "connection".
ALTER TABLE queue_matches ADD COLUMN connection jsonb;

CREATE TABLE queue_proposals (
    id                 text COLLATE "C" PRIMARY KEY CHECK (octet_length(id) BETWEEN 1 AND 128),
    queue              text COLLATE "C" NOT NULL,
    created_at         timestamptz NOT NULL,
    accept_by          timestamptz NOT NULL,
    region             text NOT NULL,
    teams              jsonb NOT NULL, -- as queue_matches'
    pairs              jsonb NOT NULL,
    skill_difference   double precision NOT NULL,
    average_difference double precision NOT NULL,
    attributes         jsonb,
    answers            jsonb NOT NULL DEFAULT '{}', -- {"player id": true (accepted) | false (declined)}
    -- open (players answering) -> placing (an allocator placing it; accept_by is then its
    -- deadline) -> accepted; or declined, timed_out, failed (placement).
    state              text NOT NULL DEFAULT 'open'
        CHECK (state IN ('open', 'placing', 'accepted', 'declined', 'timed_out', 'failed')),
    place_for          interval NOT NULL DEFAULT '0', -- the allocator's time once all accepted; 0: none
    resolved_at        timestamptz,
    CHECK ((state IN ('open', 'placing')) = (resolved_at IS NULL))
);
-- The leader's expiry reads a queue's open proposals by deadline.
CREATE INDEX queue_proposals_open ON queue_proposals (queue, accept_by) WHERE state IN ('open', 'placing');
CREATE INDEX queue_proposals_resolved ON queue_proposals (resolved_at) WHERE state NOT IN ('open', 'placing');

-- +goose Down
ALTER TABLE queue_matches DROP COLUMN connection;
DROP TABLE queue_proposals;
ALTER TABLE queues DROP COLUMN allocator;
ALTER TABLE queues DROP COLUMN acceptance_timeout;
DELETE FROM queue_events WHERE type IN ('proposed', 'requeued', 'placed');
ALTER TABLE queue_events DROP CONSTRAINT queue_events_match_check;
ALTER TABLE queue_events DROP CONSTRAINT queue_events_team_check;
ALTER TABLE queue_events ADD CONSTRAINT queue_events_check
    CHECK ((type = 'matched') = (match_id IS NOT NULL AND team IS NOT NULL));
ALTER TABLE queue_events DROP CONSTRAINT queue_events_type_check;
ALTER TABLE queue_events ADD CONSTRAINT queue_events_type_check CHECK (type IN ('matched', 'expired', 'cancelled'));
UPDATE queue_tickets SET status = 'searching', proposal = NULL WHERE status IN ('proposed', 'placing');
ALTER TABLE queue_tickets DROP CONSTRAINT queue_tickets_proposal_check;
ALTER TABLE queue_tickets DROP CONSTRAINT queue_tickets_status_check;
ALTER TABLE queue_tickets ADD CONSTRAINT queue_tickets_status_check
    CHECK (status IN ('searching', 'matched', 'expired', 'cancelled'));
DROP INDEX queue_tickets_idempotency;
CREATE UNIQUE INDEX queue_tickets_idempotency ON queue_tickets (queue, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
ALTER TABLE queue_tickets DROP COLUMN proposal;
ALTER TABLE queue_tickets DROP COLUMN owner;
