// Package queuedb is the Postgres queue.Store (Store), on the pool of a db.DB (package db:
// the pool, the transaction helpers, the migrations; schema db/migrations/00002_queue.sql and
// after).
//
// store.go holds the queue definitions and the reads (tickets, matches, events, changes,
// stats); tickets.go the group-committed creation and the ends of tickets (cancels, ticks,
// deleted queues); proposals.go and placement.go the ready checks and the allocator's
// placements; lead.go leadership by advisory lock and lease; notify.go LISTEN/NOTIFY for the
// long-polls; purge.go the retention; rules_json.go how match rules and attributes are
// stored.
package queuedb
