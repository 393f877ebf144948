package ratingsdb_test

import (
	"context"
	"testing"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// testMaxConns is the pool size of the tests' stores (see dbtest.MaxConns).
const testMaxConns = dbtest.MaxConns

// openStore returns a store on a fresh, migrated database of the test's own.
func openStore(tb testing.TB) (*ratingsdb.Store, string) {
	tb.Helper()
	url := dbtest.URL(tb)
	ctx := context.Background()
	if err := db.Migrate(ctx, url); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	s, err := ratingsdb.Open(ctx, url, db.Options{MaxConns: testMaxConns})
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
