package ratings_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// clock is a test's time, moved by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// duelOf is a 1v1 of duel in which winner beats loser.
func duelOf(id, winner, loser string) ratings.Result {
	w := 0
	return ratings.Result{MatchID: id, GameType: "duel", Map: "arena", DurationS: 600, Winner: &w, Teams: []ratings.Team{
		{Side: "red", Players: []ratings.Player{{ID: winner, LeftS: 600}}},
		{Side: "blue", Players: []ratings.Player{{ID: loser, LeftS: 600}}},
	}}
}

// TestSeasonLifecycle follows a season through the service: defined, reset once at its
// start (every rating pulled a fifth of the way to the mean, its uncertainty grown), placement games
// shown in each result's answer and in reads, then a tier, a promotion when a player climbs
// into the next, final standings at its end, and no tier after it.
func TestSeasonLifecycle(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	clk := &clock{start.Add(-24 * time.Hour)}
	store := ratings.NewMemoryStore(nil)
	svc := ratings.NewService(store, ratings.DefaultModel())
	svc.SetClock(clk.now)
	n := 0
	record := func(winner, loser string) ratings.Receipt {
		t.Helper()
		n++
		clk.t = clk.t.Add(time.Minute)
		rc, err := svc.Record(ctx, duelOf(fmt.Sprintf("m%d", n), winner, loser))
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	for range 6 {
		record("ace", "bob")
		record("bob", "cat")
	}
	placement := 2
	tiers := ratings.Tiers{Fixed: []ratings.Tier{{Name: "Bronze"}, {Name: "Silver", Min: 15}, {Name: "Gold", Min: 25}}}
	def := ratings.SeasonDefinition{StartsAt: start, EndsAt: start.AddDate(0, 1, 0), PlacementGames: &placement, Tiers: &tiers}
	if _, err := svc.PutSeason(ctx, "duel", "s1", def); err != nil {
		t.Fatal(err)
	}
	c, _ := ratings.NewContext("duel", nil)
	ps := []ratings.Participant{{ID: "ace"}, {ID: "bob"}, {ID: "cat"}}
	before, _ := store.Ratings(ctx, c, ps)
	if err := svc.SeasonTick(ctx); err != nil { // not started: nothing happens
		t.Fatal(err)
	}
	if got, _ := store.Ratings(ctx, c, ps); got[ps[0]] != before[ps[0]] {
		t.Fatalf("reset before the season's start: %+v", got[ps[0]])
	}
	clk.t = start
	if err := svc.SeasonTick(ctx); err != nil {
		t.Fatal(err)
	}
	seasons, _ := svc.Seasons(ctx, "duel")
	se := seasons[0]
	after, _ := store.Ratings(ctx, c, ps)
	for _, p := range ps {
		b, a := before[p], after[p]
		if want := se.ResetMean + 0.8*(b.Skill-se.ResetMean); a.Skill != want || math.Abs(a.Sigma*a.Sigma-(b.Sigma*b.Sigma+0.25)) > 1e-12 || a.Season != 1 || a.SeasonGames != 0 {
			t.Fatalf("%s reset from %+v to %+v (mean %v)", p.ID, b, a, se.ResetMean)
		}
	}
	view, err := svc.Viewer(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if v := view(after[ps[0]], true); v.Ranked == nil || v.Ranked.Placement == nil || *v.Ranked.Placement != (ratings.Placement{Played: 0, Needed: 2}) {
		t.Fatalf("a read before any season game: %+v", v.Ranked)
	}
	checkPlacementAndPromotion(t, record)
	clk.t = start.AddDate(0, 1, 0)
	if err := svc.SeasonTick(ctx); err != nil {
		t.Fatal(err)
	}
	checkFinalStandings(t, svc, c)
	if rc := record("ace", "cat"); rc.Changes[0].Ranked != nil {
		t.Fatalf("a result after the season: %+v", rc.Changes[0].Ranked)
	}
}

// checkPlacementAndPromotion: ace's first season game shows placement 1 of 2, his second a
// tier; from then on each answer says promoted exactly when his tier rises, and he climbs.
func checkPlacementAndPromotion(t *testing.T, record func(winner, loser string) ratings.Receipt) {
	t.Helper()
	rc := record("ace", "cat")
	if ch := rc.Changes[0]; rc.Outcome.Updates[0].Participant.ID != "ace" || ch.Ranked.Placement == nil || *ch.Ranked.Placement != (ratings.Placement{Played: 1, Needed: 2}) || ch.Promoted {
		t.Fatalf("ace's first season game: %+v", ch.Ranked)
	}
	rc = record("ace", "cat")
	ch := rc.Changes[0]
	if !ch.Ranked.Placed() || ch.Promoted || ch.Demoted {
		t.Fatalf("ace's second season game ends his placement: %+v %+v", ch.Ranked, ch)
	}
	tier, promotions := ch.Ranked.TierIndex, 0
	for range 30 {
		ch := record("ace", "cat").Changes[0]
		if ch.Promoted != (ch.Ranked.TierIndex > tier) || ch.Demoted {
			t.Fatalf("tier %d -> %d, promoted %v demoted %v", tier, ch.Ranked.TierIndex, ch.Promoted, ch.Demoted)
		}
		if ch.Promoted {
			promotions++
		}
		tier = ch.Ranked.TierIndex
	}
	if promotions == 0 || tier != 2 {
		t.Fatalf("ace, winning every game, ends in tier %d after %d promotions", tier, promotions)
	}
}

// checkFinalStandings: the season's standings are kept at its end, ace first; a player's
// seasons list his; a read of the context shows no tier any more.
func checkFinalStandings(t *testing.T, svc *ratings.Service, c ratings.Context) {
	t.Helper()
	ctx := context.Background()
	se, rows, err := svc.SeasonStandings(ctx, c, "s1", 0, 10)
	if err != nil || se.FinalAt.IsZero() || len(rows) != 2 || rows[0].Player != "ace" || rows[0].Tier != "Gold" || !rows[0].Final || rows[1].Player != "cat" {
		t.Fatalf("final standings: %+v %+v %v", se, rows, err)
	}
	mine, err := svc.PlayerSeasons(ctx, "ace")
	if err != nil || len(mine) != 1 || mine[0].Position != 1 || mine[0].Of != 2 || !mine[0].Final {
		t.Fatalf("ace's seasons: %+v %v", mine, err)
	}
	if _, _, err := svc.SeasonStandings(ctx, c, "s2", 0, 10); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("standings of no season: %v", err)
	}
}
