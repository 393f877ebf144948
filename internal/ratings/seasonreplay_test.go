package ratings_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/evaluate"
)

// seasonReplay is a history replayed through the service (in-memory store), its clock at
// each result's end, optionally with a season a year in its context: defined up front, reset
// each January as the service resets it (SeasonTick), placement 5, the default tiers.
type seasonReplay struct {
	metrics             evaluate.Metrics
	placed, withoutTier int // updates after the placement games, and those of them without a tier
	placing, withTier   int // updates during the placement games, and those of them with a tier
	seasons             int
}

func replaySeasons(t *testing.T, history []ratings.Result, yearly bool) seasonReplay {
	t.Helper()
	ctx := context.Background()
	model := ratings.DefaultModel()
	if name := os.Getenv("RATINGS_MODEL"); name != "" { // e.g. ns2-mix
		var err error
		if model, err = ratings.ModelByName(name); err != nil {
			t.Fatal(err)
		}
	}
	svc := ratings.NewService(ratings.NewMemoryStore(nil), model)
	var now time.Time
	svc.SetClock(func() time.Time { return now })
	var out seasonReplay
	if yearly {
		first, last := history[0].EndedAt.Year(), history[len(history)-1].EndedAt.Year()
		for y := first; y <= last; y++ {
			def := ratings.SeasonDefinition{StartsAt: time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC), EndsAt: time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)}
			if v := os.Getenv("RATINGS_SEASON_RESET"); v != "" { // keep,add_sd; default the service's
				var k, a float64
				fmt.Sscanf(v, "%g,%g", &k, &a)
				def.Reset = &ratings.SeasonReset{Keep: k, AddSD: a}
			}
			if _, err := svc.PutSeason(ctx, history[0].GameType, fmt.Sprint("y", y), def); err != nil {
				t.Fatal(err)
			}
			out.seasons++
		}
	}
	var sc evaluate.Score
	burnin := len(history) / 5
	year := 0
	for i, r := range history {
		now = r.EndedAt
		if y := now.Year(); y != year {
			year = y
			if err := svc.SeasonTick(ctx); err != nil {
				t.Fatal(err)
			}
		}
		rc, err := svc.Record(ctx, r)
		if err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		if i >= burnin {
			sc.Add(rc.Outcome.WinProbability[0], r.Score())
		}
		for _, ch := range rc.Changes {
			switch rk := ch.Ranked; {
			case rk == nil:
			case rk.Placement == nil:
				out.placed++
				if rk.Tier == "" {
					out.withoutTier++
				}
			default:
				out.placing++
				if rk.Tier != "" {
					out.withTier++
				}
			}
		}
	}
	out.metrics = sc.Metrics()
	return out
}

// TestSeasonsOnARealHistory replays RATINGS_DATA (ATP doubles: a file with dates) through the
// service with a season a year, soft-reset each January, and without: the seasons' replay
// predicts within .005 of log loss of the other, and every player shows his tier once his
// placement games are played (and none before). It skips without the file:
//
//	RATINGS_DATA=atp-doubles.csv go test -run TestSeasonsOnARealHistory -v ./internal/ratings
//
// RATINGS_SEASON_RESET=0.5,1 replays it with another reset (keep, add_sd), RATINGS_MODEL=ns2-mix
// with another model than the default.
func TestSeasonsOnARealHistory(t *testing.T) {
	path := os.Getenv("RATINGS_DATA")
	if path == "" || !strings.HasSuffix(path, ".csv") {
		t.Skip("set RATINGS_DATA to the ATP doubles file (atp format, with dates)")
	}
	history := readHistory(t, path) // a .csv: the atp format
	plain, seasons := replaySeasons(t, history, false), replaySeasons(t, history, true)
	t.Logf("without seasons:      accuracy %.4f, log loss %.4f, slope %.3f", plain.metrics.Accuracy, plain.metrics.LogLoss, plain.metrics.Slope)
	t.Logf("a season a year (%d): accuracy %.4f, log loss %.4f, slope %.3f; %d updates after placement (%d without a tier), %d during it (%d with one)",
		seasons.seasons, seasons.metrics.Accuracy, seasons.metrics.LogLoss, seasons.metrics.Slope, seasons.placed, seasons.withoutTier, seasons.placing, seasons.withTier)
	if d := seasons.metrics.LogLoss - plain.metrics.LogLoss; d > 0.005 || seasons.withoutTier != 0 || seasons.withTier != 0 || seasons.placed == 0 || seasons.placing == 0 {
		t.Errorf("seasons cost %.4f of log loss (want at most .005), or tiers were not shown as placement says", d)
	}
}
