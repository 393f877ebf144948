package db_test

import (
	"context"
	"testing"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// openStore returns a store on a fresh, migrated database of the test's own.
// testMaxConns is the pool size of the tests' stores. The package's tests run two at a time
// beside another package's on a server that other runs share (max_connections 100 by
// default): with the service's default of 16 a connection each, the package peaked at 40
// connections and runs failed with "too many clients already".
const testMaxConns = 6

func openStore(tb testing.TB) (*db.Store, string) {
	tb.Helper()
	url := dbtest.URL(tb)
	ctx := context.Background()
	if err := db.Migrate(ctx, url); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	s, err := db.OpenWith(ctx, url, db.Options{MaxConns: testMaxConns})
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
