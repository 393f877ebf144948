package db_test

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

func TestMigrateEmptyDatabaseAndAgain(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	n, err := db.MigrateCount(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if want := migrationCount(t); n != want {
		t.Fatalf("applied %d migrations to an empty database, want %d", n, want)
	}
	n, err = db.MigrateCount(ctx, url)
	if err != nil || n != 0 {
		t.Fatalf("second Migrate applied %d (%v), want 0 and no error", n, err)
	}
	s, err := db.Open(ctx, url, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var tables []string
	rows, err := s.Pool().Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bias_cells", "goose_db_version", "matches", "mutators", "player_standing",
		"queue_claims", "queue_events", "queue_matches", "queue_partitions", "queue_proposals", "queue_searching", "queue_stats", "queue_tickets", "queues", "rating_tunings", "ratings",
		"season_standings", "seasons"}
	if fmt.Sprint(tables) != fmt.Sprint(want) {
		t.Fatalf("tables %v, want %v", tables, want)
	}
}

// migrationCount is the number of embedded migrations.
func migrationCount(t *testing.T) int {
	files, err := fs.Glob(db.Migrations(), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("embedded migrations: %v, %v", files, err)
	}
	return len(files)
}

func TestMigrateConcurrently(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	var wg sync.WaitGroup
	applied := make([]int, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Go(func() { applied[i], errs[i] = db.MigrateCount(ctx, url) })
	}
	wg.Wait()
	total := 0
	for i := range 4 {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		total += applied[i]
	}
	if want := migrationCount(t); total != want {
		t.Fatalf("%d migrations applied in all by four migrators, want %d", total, want)
	}
}

func TestMigrationsGoDownAndUpAgain(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	p, _ := dbtest.Goose(t, url, db.Migrations())
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down: %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up after down: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := dbtest.URL(t)
	for name, tc := range map[string]struct {
		url  string
		code apperr.Code
	}{
		"nothing listens":  {"postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=5", apperr.Unavailable},
		"no such database": {mustWithDatabase(t, url, "mm_no_such_database"), apperr.Unavailable},
		"not a URL":        {"postgres://%zz", apperr.Invalid},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := db.Open(ctx, tc.url, db.Options{})
			if got := apperr.CodeOf(err); got != tc.code {
				t.Fatalf("Open: %v (%s), want %s", err, got, tc.code)
			}
			err = db.Migrate(ctx, tc.url)
			if got := apperr.CodeOf(err); got != tc.code {
				t.Fatalf("Migrate: %v (%s), want %s", err, got, tc.code)
			}
		})
	}
}

func mustWithDatabase(t *testing.T, url, name string) string {
	u, err := dbtest.WithDatabase(url, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
