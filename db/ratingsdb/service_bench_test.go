package ratingsdb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/dbtest"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// BenchmarkRecordServicePostgres is what POST /v1/results does below HTTP: Service.Record
// with the default model into Postgres, the receipt the service keeps included (the store's
// contract benchmark, BenchmarkRecordResultPostgres, keeps a test rendering of the whole
// outcome instead). A fresh 5v5 per call; "disjoint" draws each goroutine's players from 64
// of its own, "shared" all from one pool of 1,000, and in "newcomers" all ten are rated for
// the first time (as in the throughput soak, where each ticket is a new player). go test
// -run '^$' -bench RecordServicePostgres ./db/ with TEST_DATABASE_URL set. It reports the database server's
// CPU per result (db-cpu-us/op) and the WAL written per result (wal-B/op: the server's, other
// databases' included), which the neighbours on a shared machine change less than the
// throughput.
func BenchmarkRecordServicePostgres(b *testing.B) {
	s, _ := openStore(b)
	svc := ratings.NewService(s, ratings.DefaultModel())
	for _, c := range []struct {
		name   string
		pool   int
		shared bool
	}{{"disjoint", 64, false}, {"shared", 1000, true}, {"newcomers", 0, false}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			run := time.Now().UnixNano()
			var seq, workers atomic.Int64
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			db0, wal0 := dbtest.ServerCPU(s.Pool()), dbtest.WALBytes(b, s.Pool())
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := workers.Add(1)
				rng := rand.New(rand.NewPCG(uint64(w), uint64(run)))
				prefix := fmt.Sprintf("w%d-", w)
				if c.shared {
					prefix = ""
				}
				for pb.Next() {
					n := seq.Add(1)
					var names [2][]string
					if c.pool == 0 {
						for k := range 10 {
							names[k%2] = append(names[k%2], fmt.Sprintf("new-%d-%d-%d", run, n, k))
						}
					}
					seen := map[int]bool{}
					for c.pool > 0 && len(seen) < 10 {
						k := rng.IntN(c.pool)
						if !seen[k] {
							seen[k] = true
							names[len(seen)%2] = append(names[len(seen)%2], fmt.Sprintf("%splayer-%04d", prefix, k))
						}
					}
					winner := int(n % 2)
					r := ratings.Result{MatchID: fmt.Sprintf("svc-%d-%d", run, n), GameType: "tdm", DurationS: 1200, Winner: &winner,
						Map:   []string{"ns2_tram", "ns2_veil", "ns2_summit"}[n%3],
						Teams: []ratings.Team{storetest.Team("red", names[0]...), storetest.Team("blue", names[1]...)}}
					if _, err := svc.Record(ctx, r); err != nil {
						b.Error(err)
						return
					}
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "results/s")
			b.ReportMetric(float64((dbtest.ServerCPU(s.Pool())-db0).Microseconds())/float64(b.N), "db-cpu-us/op")
			b.ReportMetric(float64(dbtest.WALBytes(b, s.Pool())-wal0)/float64(b.N), "wal-B/op")
		})
	}
}
