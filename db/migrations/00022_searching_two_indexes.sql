-- queue_searching with two indexes instead of three: each player of a ticket created wrote an
-- entry in each (a creation batch's insert, the statement the database spends most on a
-- ticket: docs/performance.md, "The queue's per-ticket writes").
--
-- - The primary key is (player_id, queue), was (queue, player_id): the same rows, still the
--   one searching ticket per player in a queue (the creation's ON CONFLICT names the two
--   columns in either order), and now also the lookup of a player in every queue (the
--   ticks' claims: his live tickets elsewhere), which queue_searching_player was.
-- - queue_searching_ticket is (queue, ticket_id), was (ticket_id): the deletes of an ended
--   ticket's rows give its queue (db/queuedb/change_write.go), and a queue's searching
--   tickets (the zero cursor's Changes, a deletion's lock of them, the partitions) are read
--   through it in ticket order, which the primary key's queue prefix did.
--
-- The table holds the searching tickets' players only; its indexes are built again in the
-- migration's transaction, which holds its lock meanwhile.

-- +goose Up
ALTER TABLE queue_searching DROP CONSTRAINT queue_searching_pkey;
ALTER TABLE queue_searching ADD CONSTRAINT queue_searching_pkey PRIMARY KEY (player_id, queue);
DROP INDEX queue_searching_player;
DROP INDEX queue_searching_ticket;
CREATE INDEX queue_searching_ticket ON queue_searching (queue, ticket_id);

-- +goose Down
DROP INDEX queue_searching_ticket;
CREATE INDEX queue_searching_ticket ON queue_searching (ticket_id);
CREATE INDEX queue_searching_player ON queue_searching (player_id);
ALTER TABLE queue_searching DROP CONSTRAINT queue_searching_pkey;
ALTER TABLE queue_searching ADD CONSTRAINT queue_searching_pkey PRIMARY KEY (queue, player_id);
