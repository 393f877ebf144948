// Package db is the Postgres implementation of ratings.Store, on pgx v5 (pgxpool), and the
// embedded SQL migrations that create its schema (migrations/*.sql, applied with goose by
// Migrate, from the service's start-up and from `api migrate`).
//
// Tables: mutators (the policy), matches (every accepted result as JSON, in the order it was
// accepted, with its body hash and the exact bytes of its response), ratings (one row per
// participant and context) and bias_cells (the side-bias table, each cell spread over a few
// shard rows). See migrations/00001_ratings.sql.
//
// RecordResult is one READ COMMITTED transaction in two pipelined round trips; rows are locked
// in one fixed order, so concurrent results over the same players neither deadlock nor lose an
// update, and a deadlock or serialization failure (which that order should rule out) is
// retried. Rebuild holds off the results of its game type with an advisory lock.
//
// The store converts everything Postgres says into the domain's apperr codes: pgx.ErrNoRows is
// NotFound, a unique violation (23505) Conflict, a connection that cannot be had or is lost
// (and a context that ends first) Unavailable, anything else Internal with the cause kept for
// the logs. Errors of the caller's ApplyFunc and ReplayFunc are returned as they are.
//
// Tests get a database of their own from package dbtest.
package db
