package dbtest

import (
	"database/sql"
	"io/fs"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx", which goose runs on
	"github.com/pressly/goose/v3"
)

// Goose opens the database at url with database/sql and returns it with a goose provider of
// migrations on it, for a test that moves a database up and down its migrations one by one;
// the connection closes at the test's end.
func Goose(tb testing.TB, url string, migrations fs.FS) (*goose.Provider, *sql.DB) {
	tb.Helper()
	sqlDB, err := sql.Open("pgx", url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = sqlDB.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations)
	if err != nil {
		tb.Fatal(err)
	}
	return p, sqlDB
}
