package ratings_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// RebuildSolved leaves every skill (and its uncertainty) the full-history solve's, and the
// rest -- games, offsets, the bias table -- the model's replay.
func TestRebuildSolved(t *testing.T) {
	ctx := context.Background()
	store := ratings.NewMemoryStore(nil)
	svc := ratings.NewService(store, ratings.DefaultModel())
	h := league.Results(league.Simulate(league.Default(2)))[:400]
	for i := range h { // the times the replay below sees too
		h[i].EndedAt = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour)
	}
	for _, r := range h {
		if _, err := svc.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := svc.RebuildSolved(ctx, "ns2", ratings.DefaultSolvePrior, nil)
	if err != nil || rep.Results != len(h) {
		t.Fatalf("RebuildSolved: %+v %v", rep, err)
	}
	online, err := ratings.Replay(ratings.DefaultModel(), h)
	if err != nil {
		t.Fatal(err)
	}
	solved, _, err := ratings.Solve(h, online.Bias, ratings.DefaultSolvePrior)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := ratings.NewContext("ns2", nil)
	ps := online.Participants()
	got, err := store.Ratings(ctx, c, ps)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, p := range ps {
		g, o, s := got[p], online.Ratings[p], solved[p]
		if g.Skill != s.Skill || g.Sigma != s.Sigma || g.Games != o.Games || g.Offset != o.Offset || g.Commander != o.Commander {
			t.Fatalf("%s: %+v, want the solve's skill %+v and the replay's rest %+v", p, g, s, o)
		}
		if g.Skill != o.Skill {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("the solve changed no skill: the check cannot fail")
	}
}
