// Package db is the Postgres plumbing both stores use, on pgx v5 (pgxpool): the ratings
// store (package db/ratingsdb) and the queue store (package db/queuedb) run their queries on
// one DB, and this package knows nothing of either's tables beyond the migrations.
//
//   - Connecting: Open makes a DB (a pool with the call deadlines of Options and the sockets
//     it opened, so that Shutdown can close them however stuck); Connect is Open with retries
//     for a database that is not there yet, and the migrations, at start-up (Startup).
//   - Calls: a store bounds each call with Call (an Op made with NewOp or NewLongOp names it
//     for the in-flight counts and the messages) and work no caller waits on with Background;
//     a call that runs out of time is Unavailable, saying so.
//   - Errors: MapError converts everything Postgres says into the domain's apperr codes:
//     pgx.ErrNoRows is NotFound, a unique violation (23505) Conflict, a connection that
//     cannot be had or is lost (and a context that ends first) Unavailable, anything else
//     Internal with the cause kept for the logs. Retryable says which errors a transaction
//     may simply be run again after.
//   - Transactions: InTx runs one on a connection of its own and again after a deadlock or a
//     serialization failure; Committed checks that a COMMIT sent in a pipelined batch did
//     commit; Release rolls back what is left open and returns the connection.
//   - Schema: the embedded goose migrations (migrations/*.sql), applied by Migrate from the
//     service's start-up and from `api migrate`; SchemaVersion and Ready, for the readiness
//     probe.
//
// Tests get a database of their own from package dbtest, and a private server they may stop,
// freeze and thaw from package pgfault.
package db
