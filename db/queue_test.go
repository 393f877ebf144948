package db_test

import (
	"context"
	"testing"

	"matchmaker/db"
	"matchmaker/internal/queue"
	"matchmaker/internal/queue/queuetest"
)

// openQueueStore opens a queue store on a fresh, migrated database, and returns it with the
// rating store whose pool it uses.
func openQueueStore(tb testing.TB) (*db.QueueStore, *db.Store, string) {
	tb.Helper()
	s, url := openStore(tb)
	qs, err := db.NewQueueStore(context.Background(), s.Pool())
	if err != nil {
		tb.Fatalf("NewQueueStore: %v", err)
	}
	tb.Cleanup(qs.Close) // before the pool's Close, registered earlier
	return qs, s, url
}

func TestPostgresQueueStoreContract(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, func(t *testing.T) queue.Store {
		qs, _, _ := openQueueStore(t)
		return qs
	})
}
