// Package ratingsdb is the Postgres ratings.Store, on a db.DB (package db: the pool, its
// deadlines and shutdown, the migrations).
//
// Tables: mutators (the policy), matches (every accepted result as JSON, in the order it was
// accepted, with its body hash and the exact bytes of its response), ratings (one row per
// participant and context), bias_cells (the side-bias table, each cell spread over a few
// shard rows) and rating_tunings. See db/migrations/00001_ratings.sql.
//
// RecordResult is group-committed (commit.go): a few committers each write the results
// waiting in one READ COMMITTED transaction of two pipelined round trips (batch.go); rows are
// locked in one fixed order, so concurrent results over the same players neither deadlock
// nor lose an update, and a deadlock or serialization failure (which that order should rule
// out) is retried. Rebuild and DeleteResult (rebuild.go) hold off the results of their game
// type with an advisory lock, for a moment at the start and for their last step.
//
// Errors are the domain's (db.MapError). Errors of the caller's ApplyFunc and ReplayFunc are
// returned as they are.
package ratingsdb
