-- A result's end of its match's claims (EndClaims, db/queuedb/claims_end.go) updates each
-- claim's until in place: a heap-only (HOT) update, which writes no index entry, where it
-- wrote one in each of queue_claims' three indexes. An update is heap-only only when it
-- changes no indexed column and the new version fits on the row's page, so:
--
-- - until is no longer indexed. The purge, which deleted the claims by it, finds them by
--   purge_after instead: the until the claim was made with, never changed by its end. An
--   ended claim's row stays until then (at most the queue's ticket_ttl_s past its end) and
--   the purge still deletes only the claims whose until has passed. The rows stored before
--   this migration get -infinity: the purge looks at them first and deletes them once their
--   until has passed, as before. (The default stays: a row inserted without purge_after is
--   found first, never kept.)
-- - Each page keeps half its room for the new versions (fillfactor 50; new pages only): a
--   claim is ended at most once, by its match's result, some seconds to minutes after the
--   tick that wrote it filled its page. With every page filled, an end's new version went to
--   another page, which the indexes had to be told of.
--
-- Adding a column with a constant default, a new index and a storage parameter rewrite
-- nothing; the index is built once over the claims kept (a purge's retention of them).

-- +goose Up
ALTER TABLE queue_claims ADD COLUMN purge_after timestamptz NOT NULL DEFAULT '-infinity';
DROP INDEX queue_claims_until;
CREATE INDEX queue_claims_purge_after ON queue_claims (purge_after);
ALTER TABLE queue_claims SET (fillfactor = 50);

-- +goose Down
ALTER TABLE queue_claims RESET (fillfactor);
DROP INDEX queue_claims_purge_after;
CREATE INDEX queue_claims_until ON queue_claims (until);
ALTER TABLE queue_claims DROP COLUMN purge_after;
