// Package db is the Postgres implementation of ratings.Store, on pgx v5 (pgxpool), and the
// embedded SQL migrations that create its schema (applied with goose by Migrate).
//
// The store converts everything Postgres says into the domain's apperr codes: pgx.ErrNoRows is
// NotFound, a unique violation (23505) Conflict, a connection that cannot be had or is lost
// Unavailable, anything else Internal with the cause kept for the logs.
package db
