package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// SchemaVersion is the highest migration embedded in this binary: the schema version its
// queries need.
var SchemaVersion = func() int64 {
	entries, err := fs.ReadDir(Migrations(), ".")
	if err != nil {
		panic(err)
	}
	var top int64
	for _, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		if n, err := strconv.ParseInt(prefix, 10, 64); err == nil {
			top = max(top, n)
		}
	}
	return top
}()

// schemaReady remembers that the database's schema reached SchemaVersion: it never goes back,
// so Ready asks once.
type schemaReady struct{ ok atomic.Bool }

// Ready checks that the database answers and that its schema is at least at SchemaVersion,
// for the readiness probe: a replica started on a database the migrations have not reached
// (the Job still running, or MATCHMAKER_MIGRATE=false without one) answered /readyz 200 while
// every store call failed. A schema newer than the binary's (a rolling update, migrated
// first) is ready: migrations only add.
func (d *DB) Ready(ctx context.Context) error {
	if err := d.Ping(ctx); err != nil {
		return err
	}
	if d.schema.ok.Load() {
		return nil
	}
	var version int64
	err := d.pool.QueryRow(ctx,
		`SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&version)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table: never migrated
		err = nil
	}
	if err != nil {
		return MapError(err, "schema version")
	}
	if version < SchemaVersion {
		return apperr.New(apperr.Unavailable, "%s", fmt.Sprintf(
			"the database schema is at version %d, this binary needs %d: run `api migrate`", version, SchemaVersion))
	}
	d.schema.ok.Store(true)
	return nil
}
