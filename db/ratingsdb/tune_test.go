package ratingsdb_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// Tuning over Postgres: the fit stored in rating_tunings, used by rebuilds, by results and by
// another service over the same database.
func TestTuneServicePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("records 3,000 results")
	}
	s, _ := openStore(t)
	storetest.TuneService(t, s, 3000)
}

// BenchmarkTunePostgres is what `api tune` does, timed, on 100,000 results of the NS2 league
// (TUNE_RESULTS to change it) stored as history: the history read from Postgres, each
// context fitted, the tunings written. Once:
//
//	go test -run '^$' -bench TunePostgres -benchtime 1x ./db/
func BenchmarkTunePostgres(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("TUNE_RESULTS")); err == nil && v > 0 {
		n = v
	}
	s, _ := openStore(b)
	cfg := league.Default(1)
	cfg.Matches = n
	if err := s.InsertHistory(context.Background(), league.Results(league.Simulate(cfg))); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	svc := ratings.NewService(s, ratings.DefaultModel())
	for b.Loop() {
		start := time.Now()
		reports, err := svc.Tune(context.Background(), cfg.GameType)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "tune-s")
		for _, ct := range reports {
			b.Logf("%s: %+v", ct.Context, ct.Report)
			b.ReportMetric(float64(ct.Report.Evaluations), "replays")
		}
	}
}

// Two replicas' stores on one database: the tuning claim of a context is held by one at a
// time, and free again once released (the self-tuning of both replicas used to tune, and
// rebuild, the same history at once).
func TestClaimTuneAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	a, url := openStore(t)
	b, err := ratingsdb.Open(ctx, url, db.Options{MaxConns: testMaxConns})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	release, claimed, err := a.ClaimTune(ctx, "ns2")
	if err != nil || !claimed {
		t.Fatalf("a's claim: %v %v", claimed, err)
	}
	if _, claimed, err := b.ClaimTune(ctx, "ns2"); err != nil || claimed {
		t.Fatalf("b's claim while a holds it: %v %v", claimed, err)
	}
	if rb, claimed, err := b.ClaimTune(ctx, "ns2+instagib"); err != nil || !claimed {
		t.Fatalf("b's claim of another context: %v %v", claimed, err)
	} else {
		rb()
	}
	release()
	rb, claimed, err := b.ClaimTune(ctx, "ns2")
	if err != nil || !claimed {
		t.Fatalf("b's claim once a released it: %v %v", claimed, err)
	}
	rb()
}
