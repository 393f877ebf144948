package ratings_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/evaluate"
)

// TestSelfTuningOnline replays histories through the service (in-memory store) as a game
// posts them, each result's served prediction scored after the first fifth, for ns2-kalman,
// ns2-mix and openskill-pl with their defaults, without and with self-tuning (AutoTuneTick
// with its rebuild, as the service runs it, as each threshold is crossed: 2,000 results, then
// each doubling). Leagues RATINGS_LEAGUES (default casual,pro), seeds RATINGS_SEEDS (default
// 1,4,7), RATINGS_MATCHES results of each (0: the league's length), and RATINGS_DATA (an ATP
// doubles CSV) when set. It runs only with RATINGS_SELFTUNE=1:
//
//	RATINGS_SELFTUNE=1 RATINGS_DATA=atp-doubles.csv go test -run TestSelfTuningOnline -v -timeout 2h ./internal/ratings/
func TestSelfTuningOnline(t *testing.T) {
	if os.Getenv("RATINGS_SELFTUNE") == "" {
		t.Skip("set RATINGS_SELFTUNE=1 (RATINGS_LEAGUES, RATINGS_SEEDS, RATINGS_MATCHES, RATINGS_DATA) to run the replays")
	}
	leagues, seeds := []string{"casual", "pro"}, []string{"1", "4", "7"}
	if s := os.Getenv("RATINGS_LEAGUES"); s != "" {
		leagues = strings.Split(s, ",")
	}
	if s := os.Getenv("RATINGS_SEEDS"); s != "" {
		seeds = strings.Split(s, ",")
	}
	matches, _ := strconv.Atoi(os.Getenv("RATINGS_MATCHES"))
	type history struct {
		name    string
		results []ratings.Result
	}
	var hs []history
	for _, name := range leagues {
		for _, s := range seeds {
			seed, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("RATINGS_SEEDS: %v", err)
			}
			hs = append(hs, history{fmt.Sprintf("%s:%d", name, seed), leagueHistory(t, name, seed, matches)})
		}
	}
	if path := os.Getenv("RATINGS_DATA"); path != "" {
		hs = append(hs, history{"data", readHistory(t, path)})
	}
	models := []ratings.Model{ratings.DefaultKalman(), ratings.DefaultMixture(), ratings.DefaultWengLin(true)}
	for _, h := range hs {
		for _, m := range models {
			for _, self := range []bool{false, true} {
				start := time.Now()
				got, kept := replayOnline(t, m, h.results, self)
				t.Logf("%-9s %-13s self-tuning %-5v  accuracy %.4f  log loss %.4f  slope %.3f  (%d results, %s)%s",
					h.name, m.Name(), self, got.Accuracy, got.LogLoss, got.Slope, len(h.results), time.Since(start).Round(time.Second), kept)
			}
		}
	}
}

// replayOnline records history through a service learning with m, scoring what it served
// for each result after the first fifth; with selfTune it tunes itself as the service does.
// It returns the scores and what the tunings kept.
func replayOnline(t *testing.T, m ratings.Model, history []ratings.Result, selfTune bool) (evaluate.Metrics, string) {
	t.Helper()
	ctx := context.Background()
	svc := ratings.NewService(ratings.NewMemoryStore(nil), m)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc.SetClock(func() time.Time { return now })
	var sc evaluate.Score
	var kept strings.Builder
	burnin, next := len(history)/5, ratings.MinTuneResults
	for i, r := range history {
		if !r.EndedAt.IsZero() {
			now = r.EndedAt
		}
		rc, err := svc.Record(ctx, r)
		if err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		if i >= burnin {
			sc.Add(rc.Outcome.WinProbability[0], r.Score())
		}
		if !selfTune || i+1 < next {
			continue
		}
		next *= 2
		done, err := svc.AutoTuneTick(ctx, ratings.AutoTune{Rebuild: true})
		if err != nil {
			t.Fatalf("self-tuning at %d results: %v", i+1, err)
		}
		for _, at := range done {
			rep := at.Tuning.Report
			fmt.Fprintf(&kept, "\n    at %d: kept %v (held-out %.4f -> %.4f) %+v", rep.Results, at.Rebuilt, rep.HeldOutBefore, rep.HeldOutAfter, at.Tuning.Params)
		}
	}
	return sc.Metrics(), kept.String()
}
