package ratingsdb_test

import (
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// BenchmarkRecordResultPostgres: go test -run '^$' -bench RecordResultPostgres ./db/ratingsdb/
// with TEST_DATABASE_URL set (see storetest.BenchRecord for what it measures).
func BenchmarkRecordResultPostgres(b *testing.B) {
	s, _ := openStore(b)
	storetest.BenchRecord(b, s, func() time.Duration { return dbtest.ServerCPU(s.Pool()) })
}
