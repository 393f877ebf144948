package db_test

import (
	"context"
	"testing"

	"matchmaker/db"
	"matchmaker/db/dbtest"
	"matchmaker/internal/ratings"
	"matchmaker/internal/ratings/storetest"
)

// openStore returns a store on a fresh, migrated database of the test's own.
func openStore(tb testing.TB) (*db.Store, string) {
	tb.Helper()
	url := dbtest.URL(tb)
	ctx := context.Background()
	if err := db.Migrate(ctx, url); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	s, err := db.Open(ctx, url)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(s.Close)
	return s, url
}

func TestPostgresStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ratings.Store {
		s, _ := openStore(t)
		return s
	})
}
