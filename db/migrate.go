package db

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

//go:embed migrations/*.sql
var embedded embed.FS

// Migrations returns the embedded SQL migrations (goose files, numbered).
func Migrations() fs.FS {
	sub, err := fs.Sub(embedded, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	return sub
}

// Migrate applies every embedded migration the database at url has not had yet, and returns
// how many it applied. It is safe to run again (it then applies nothing) and from several
// processes at once: a session advisory lock makes them take turns.
func Migrate(ctx context.Context, url string) error {
	_, err := MigrateCount(ctx, url)
	return err
}

// MigrateCount is Migrate, also saying how many migrations it applied.
func MigrateCount(ctx context.Context, url string) (int, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return 0, apperr.Wrap(apperr.Invalid, err, "db: the database URL cannot be parsed")
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout // a server that never answers fails the connect
	}
	sqlDB := stdlib.OpenDB(*cfg)
	defer sqlDB.Close()
	if err := sqlDB.PingContext(ctx); err != nil {
		return 0, MapError(err, "migrate: connect")
	}
	n, err := migrate(ctx, sqlDB)
	if err != nil {
		return n, MapError(err, "migrate")
	}
	return n, nil
}

func migrate(ctx context.Context, sqlDB *sql.DB) (int, error) {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return 0, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, Migrations(),
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return 0, fmt.Errorf("goose: %w", err)
	}
	res, err := p.Up(ctx)
	return len(res), err
}
