-- The ticket queue (queue.Store on Postgres, db/queue*.go): queue definitions, tickets, the
-- players of searching tickets, the matches the queue made and the events of every queue.
--
-- Locks, always taken in this order, so that no two of the store's transactions deadlock:
--  1. the queue's row in queues. A transaction that changes tickets' status (a tick, a cancel,
--     a queue's deletion) locks it first (FOR NO KEY UPDATE, or FOR UPDATE to delete the
--     queue) and numbers its events under it; a ticket creation takes FOR KEY SHARE, which
--     only a deletion's FOR UPDATE waits for.
--  2. ticket rows, by id.
--  3. rows of queue_searching, inserted by (queue, player_id) in that order.
-- Names and ids are compared byte by byte (COLLATE "C"), as in 00001.

-- +goose Up
CREATE TABLE queues (
    name           text COLLATE "C" PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]{1,64}$'),
    game_type      text COLLATE "C" NOT NULL,
    mutators       text[] NOT NULL,
    team_size      smallint NOT NULL CHECK (team_size >= 1),
    teams          smallint NOT NULL CHECK (teams >= 2),
    strategy       text NOT NULL,
    -- {"interval": [{"after_s": 0, "value": 25}, ...], "max_latency_ms": [...]}
    expansions     jsonb NOT NULL,
    regions        text[] NOT NULL, -- the regions tickets may name; empty: any
    ticket_ttl     interval NOT NULL,
    max_party_size smallint NOT NULL CHECK (max_party_size BETWEEN 1 AND team_size),
    tick           interval NOT NULL,
    webhook_url    text,
    webhook_secret text,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    -- A deleted queue stays as a tombstone: its tickets, matches and events stay readable, and
    -- if the queue is made again its events go on numbering where they stopped, so that an
    -- SSE client resuming with an old Last-Event-ID never sees a number twice.
    deleted_at     timestamptz,
    -- The Seq of the queue's last event; writers of events take the next numbers by updating
    -- it, which also serializes them: Seq is in commit order.
    event_seq      bigint NOT NULL DEFAULT 0 CHECK (event_seq >= 0),
    -- The Seq of the last event the webhook acknowledged: the events after it are the outbox.
    webhook_seq    bigint NOT NULL DEFAULT 0 CHECK (webhook_seq >= 0),
    CHECK ((webhook_url IS NULL) = (webhook_secret IS NULL))
);

CREATE TABLE queue_tickets (
    id              text COLLATE "C" PRIMARY KEY CHECK (octet_length(id) BETWEEN 1 AND 128),
    -- No foreign key: a ticket is inserted only by a batch that holds its queue's row FOR KEY
    -- SHARE and has just read it live; the key's check added 0.7 ms to the 5 ms of a 256-ticket
    -- batch's statement (EXPLAIN ANALYZE), about 3 µs a ticket.
    queue           text COLLATE "C" NOT NULL,
    status          text NOT NULL CHECK (status IN ('searching', 'matched', 'expired', 'cancelled')),
    -- [{"id": ..., "rating": ..., "source": ...}]: read and written whole, never queried.
    players         jsonb NOT NULL,
    latencies       jsonb, -- {"region": ms}; NULL: any region
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    reason          text NOT NULL DEFAULT '',
    -- {"match_id", "team", "region", "teams"} once matched. The ticket is read alone (long
    -- polls, the leader's Changes) and purged on its own clock, so it carries its assignment
    -- rather than joining its match. That costs WAL: the statement of a tick that matches
    -- 10,000 tickets wrote 6.3 MiB, 5.3 with only match_id and team here (measured as
    -- pg_current_wal_insert_lsn before and after it).
    assignment      jsonb,
    idempotency_key text COLLATE "C",
    body_hash       bytea CHECK (octet_length(body_hash) = 32),
    -- The transaction that last wrote the row (pg_current_xact_id()); every statement that
    -- changes a ticket sets it. Changes returns the rows written by transactions at or above
    -- the xmin of the previous read's snapshot (see db/queue.go). No row is ever updated
    -- without changing this indexed column, so no update is HOT: each change of a ticket
    -- writes an entry in each index, the price of reading the changes of a queue without
    -- scanning it (for the statement of a tick that matches 10,000 tickets, 6.3 MiB of WAL
    -- with this index, 5.6 without).
    changed_xid     xid8 NOT NULL,
    CHECK ((status = 'matched') = (assignment IS NOT NULL)),
    CHECK ((idempotency_key IS NULL) = (body_hash IS NULL))
);
CREATE INDEX queue_tickets_changes ON queue_tickets (queue, changed_xid);
-- Keys are per queue; finished tickets keep theirs until purged.
CREATE UNIQUE INDEX queue_tickets_idempotency ON queue_tickets (queue, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- Purge's range. Searching tickets, the live part of the table, are not in it. Each ticket
-- that ends adds an entry (a tick's statement that ends 10,000 wrote 6.3 MiB of WAL, 5.7
-- without this index), where a purge without it would read the whole table, the finished
-- tickets of the last minutes included, each time.
CREATE INDEX queue_tickets_finished ON queue_tickets (updated_at) WHERE status <> 'searching';

-- The players of searching tickets, and only theirs: a row exists exactly while its ticket is
-- searching (written and deleted in the same transactions as the ticket's status). The
-- primary key is what refuses a second searching ticket for a player, whichever replica
-- creates it; a zero cursor's Changes reads the searching tickets through it.
CREATE TABLE queue_searching (
    queue     text COLLATE "C" NOT NULL,
    player_id text COLLATE "C" NOT NULL,
    ticket_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (queue, player_id)
);
CREATE INDEX queue_searching_ticket ON queue_searching (ticket_id);

-- The matches the queue made; match_id is what a game server posts to /v1/results. Written
-- only by CommitTick, under the queue's row lock, which proves the queue exists: no foreign
-- key (nor on queue_events), whose check would cost a lookup and a row lock for each of a
-- tick's thousands of rows.
CREATE TABLE queue_matches (
    id                 text COLLATE "C" PRIMARY KEY CHECK (octet_length(id) BETWEEN 1 AND 128),
    queue              text COLLATE "C" NOT NULL,
    created_at         timestamptz NOT NULL,
    region             text NOT NULL,
    -- [{"players": [{"id", "ticket_id", "rating"}], "rating_total"}]
    teams              jsonb NOT NULL,
    -- [{"players": [a, b], "difference", "interval"}]
    pairs              jsonb NOT NULL,
    skill_difference   double precision NOT NULL,
    average_difference double precision NOT NULL
);
CREATE INDEX queue_matches_created ON queue_matches (created_at);

CREATE TABLE queue_events (
    queue     text COLLATE "C" NOT NULL,
    seq       bigint NOT NULL CHECK (seq > 0),
    type      text NOT NULL CHECK (type IN ('matched', 'expired', 'cancelled')),
    ticket_id text COLLATE "C" NOT NULL,
    match_id  text COLLATE "C",
    team      smallint,
    reason    text NOT NULL DEFAULT '',
    at        timestamptz NOT NULL,
    PRIMARY KEY (queue, seq),
    CHECK ((type = 'matched') = (match_id IS NOT NULL AND team IS NOT NULL))
);

-- +goose Down
DROP TABLE queue_events;
DROP TABLE queue_matches;
DROP TABLE queue_searching;
DROP TABLE queue_tickets;
DROP TABLE queues;
