-- Match rules (DESIGN, "Match rules"): a queue's attribute declarations and rules, a ticket's
-- attributes, and what a match's rules agreed on. Each is read and written whole with its row
-- and never queried, so each is a jsonb column, NULL when there is none: a queue, a ticket or
-- a match of before rules reads as it did. (The assignment a matched ticket carries holds the
-- match's attributes inside its existing JSON.)

-- +goose Up
ALTER TABLE queues ADD COLUMN rules jsonb;            -- {"attributes": {...}, "rules": [...]}, as the API's
ALTER TABLE queue_tickets ADD COLUMN attributes jsonb; -- {"mode": "ranked", "maps": ["dust"]}
ALTER TABLE queue_matches ADD COLUMN attributes jsonb; -- [{"name": "maps", "value": ["dust"]}], in the rules' order

-- +goose Down
ALTER TABLE queue_matches DROP COLUMN attributes;
ALTER TABLE queue_tickets DROP COLUMN attributes;
ALTER TABLE queues DROP COLUMN rules;
