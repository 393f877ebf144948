package ratingsdb_test

import (
	"context"
	"testing"
	"time"

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
	return openStoreOpts(tb, db.Options{MaxConns: testMaxConns})
}

func openStoreOpts(tb testing.TB, o db.Options) (*ratingsdb.Store, string) {
	tb.Helper()
	url := dbtest.URL(tb)
	ctx := context.Background()
	if err := db.Migrate(ctx, url); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	s, err := ratingsdb.Open(ctx, url, o)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(s.Close)
	return s, url
}

// The contract is about what is stored, not how fast: its calls get a deadline well past the
// default's 3 s, which a loaded CI host's stalls reached (results waiting behind a concurrent
// rebuild's locked steps failed Unavailable and the count came up short). The deadline's
// own behaviour is tested in fault_test.go.
func TestPostgresStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ratings.Store {
		s, _ := openStoreOpts(t, db.Options{MaxConns: testMaxConns, Timeout: 20 * time.Second})
		return s
	})
}
