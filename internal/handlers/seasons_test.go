package handlers

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// seasonClock is a test's time, moved by hand.
type seasonClock struct{ t time.Time }

func (c *seasonClock) now() time.Time { return c.t }

// duelBody is a 1v1 of duel (context duel+ranked) in which winner beats loser.
func duelBody(id, winner, loser string) string {
	return fmt.Sprintf(`{"match_id":%q,"context":{"game_type":"duel","mutators":["ranked"]},"map":"arena","duration_s":600,
		"teams":[{"side":"red","players":[{"id":%q}]},{"side":"blue","players":[{"id":%q}]}],"winner":0}`, id, winner, loser)
}

// TestSeasonsOverHTTP defines a season, refuses the definitions that do not hold (each a 400
// naming its field, nothing stored), and reads it through its course: placement, tiers in
// the reads and the leaderboard, the season's standings, a player's seasons.
func TestSeasonsOverHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &seasonClock{start.Add(-time.Hour)}
	svc := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	svc.SetClock(clk.now)
	h := NewServer(Deps{Ratings: svc, Auth: &Auth{Off: true}})
	if _, err := svc.SetMutator(ctx, "ranked", true); err != nil {
		t.Fatal(err)
	}
	put := func(name, body string) *http.Response {
		return exchange(t, h, http.MethodPut, "/v1/seasons/duel/"+name, "application/json", body)
	}
	def := `{"mutators":["ranked"],"starts_at":"2027-01-01T00:00:00Z","ends_at":"2027-04-01T00:00:00Z",
		"placement_games":2,"tiers":[{"name":"Bronze"},{"name":"Silver","min":15},{"name":"Gold","min":30}]}`
	var se seasonJSON
	decodeJSON(t, put("s1", def), &se)
	if se.Context.Key != "duel+ranked" || se.Status != "scheduled" || se.Reset != (resetOut{Keep: 0.8, AddSD: 0.5}) || se.PlacementGames != 2 {
		t.Fatalf("PUT season: %+v", se)
	}
	for _, bad := range []struct{ name, body, field string }{
		{"s2", `{"mutators":["ranked"],"starts_at":"2027-03-01T00:00:00Z","ends_at":"2027-05-01T00:00:00Z"}`, "starts_at"},
		{"s2", `{"mutators":["ranked"],"starts_at":"2027-05-01T00:00:00Z","ends_at":"2027-06-01T00:00:00Z","reset":{"keep":1.5}}`, "reset.keep"},
		{"s2", `{"mutators":["ranked"],"starts_at":"2027-05-01T00:00:00Z","ends_at":"2027-06-01T00:00:00Z",
			"tiers":[{"name":"A"},{"name":"B","min":50},{"name":"C","min":40}]}`, "tiers[2].min"},
		{"s2", `{"mutators":["ranked"],"starts_at":"2027-06-01T00:00:00Z","ends_at":"2027-05-01T00:00:00Z"}`, "ends_at"},
		{"s2", `{"starts_at":"2027-05-01T00:00:00Z","ends_at":"2027-06-01T00:00:00Z","tiers":{"percentiles":[50,40]}}`, "tiers.percentiles[1]"},
		{"s2", `{"starts_at":"yesterday","ends_at":"2027-06-01T00:00:00Z"}`, "starts_at"},
		{"no%20such", `{"starts_at":"2027-05-01T00:00:00Z","ends_at":"2027-06-01T00:00:00Z"}`, "season"},
	} {
		resp := put(bad.name, bad.body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, bad.field) {
			t.Errorf("%s: %d %+v, want a 400 naming %s", bad.body, resp.StatusCode, p, bad.field)
		}
	}
	var list seasonsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/seasons/duel", "", ""), &list)
	if len(list.Seasons) != 1 || list.Seasons[0].Season != "s1" {
		t.Fatalf("after the refused definitions: %+v", list)
	}
	n := 0
	record := func(winner, loser string) ratingUpdate {
		n++
		clk.t = clk.t.Add(time.Minute)
		var got resultResponse
		decodeJSON(t, postResult(t, h, duelBody(fmt.Sprint("m", n), winner, loser)), &got)
		return got.Updates[0]
	}
	if u := record("ace", "bob"); u.Season != "" || u.Placement != nil {
		t.Fatalf("before the season: %+v", u)
	}
	clk.t = start
	if err := svc.SeasonTick(ctx); err != nil {
		t.Fatal(err)
	}
	if u := record("ace", "bob"); u.ID != "ace" || u.Season != "s1" || u.Placement == nil || *u.Placement != (placementJSON{1, 2}) || u.Tier != "" {
		t.Fatalf("the first game of the season: %+v", u)
	}
	checkSeasonReads(t, h, "1 of 2")
	if u := record("ace", "bob"); u.Placement != nil || u.Tier == "" || u.Promoted || u.Demoted {
		t.Fatalf("the placement's last game: %+v", u)
	}
	for range 11 {
		record("ace", "bob")
	}
	checkSeasonReads(t, h, "placed")
	var dist tierDistributionJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/seasons/duel/s1/tiers?mutators=ranked", "", ""), &dist)
	if dist.Status != "running" || dist.Ranked != 2 || dist.Placing != 0 || len(dist.Tiers) != 3 || dist.Tiers[0].Name != "Bronze" ||
		dist.Tiers[0].Players+dist.Tiers[1].Players+dist.Tiers[2].Players != 2 {
		t.Fatalf("the tier distribution: %+v", dist)
	}
	clk.t = start.AddDate(0, 3, 0)
	if err := svc.SeasonTick(ctx); err != nil {
		t.Fatal(err)
	}
	checkSeasonStandings(t, h)
}

// checkSeasonReads: a player's rating read and the batch read show the season and his
// placement (or tier once placed); the season's live board ranks only the placed.
func checkSeasonReads(t *testing.T, h http.Handler, stage string) {
	t.Helper()
	var mine playerRatingsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/players/ace/ratings", "", ""), &mine)
	var batch batchRatingsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/ratings?game_type=duel&mutators=ranked&ids=ace,nobody", "", ""), &batch)
	var board leaderboardResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/leaderboard?game_type=duel&mutators=ranked&season=s1", "", ""), &board)
	a, nobody := mine.Ratings[0], batch.Ratings[1]
	if a.Season != "s1" || nobody.Season != "s1" || nobody.Placement == nil || *nobody.Placement != (placementJSON{0, 2}) || board.Season == nil || board.Season.Status != "running" {
		t.Fatalf("%s: ace %+v, nobody %+v, board %+v", stage, a, nobody, board.Season)
	}
	switch stage {
	case "1 of 2":
		if a.Placement == nil || *a.Placement != (placementJSON{1, 2}) || a.Tier != "" || len(board.Players) != 0 {
			t.Fatalf("in placement: %+v, board %+v", a, board.Players)
		}
	default:
		if a.Placement != nil || a.Tier == "" || batch.Ratings[0].Tier != a.Tier || len(board.Players) != 2 || board.Players[0].ID != "ace" || board.Players[0].Tier != a.Tier {
			t.Fatalf("placed: %+v, board %+v", a, board.Players)
		}
	}
}

// checkSeasonStandings: at the season's end its standings are final, and a player's seasons
// list his; reads show no season any more.
func checkSeasonStandings(t *testing.T, h http.Handler) {
	t.Helper()
	var board leaderboardResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/leaderboard?game_type=duel&mutators=ranked&season=s1&limit=1", "", ""), &board)
	if board.Season == nil || !board.Season.Final || board.Season.Status != "ended" || board.Season.Of != 2 || len(board.Players) != 1 || board.Players[0].ID != "ace" {
		t.Fatalf("final board: %+v %+v", board.Season, board.Players)
	}
	var seasons playerSeasonsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/players/bob/seasons", "", ""), &seasons)
	if len(seasons.Seasons) != 1 || seasons.Seasons[0].Position != 2 || seasons.Seasons[0].Of != 2 || !seasons.Seasons[0].Final || seasons.Seasons[0].Season != "s1" {
		t.Fatalf("bob's seasons: %+v", seasons)
	}
	var mine playerRatingsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/players/ace/ratings", "", ""), &mine)
	if mine.Ratings[0].Season != "" || mine.Ratings[0].Tier != "" {
		t.Fatalf("after the season: %+v", mine.Ratings[0])
	}
	resp := exchange(t, h, http.MethodGet, "/v1/leaderboard?game_type=duel&mutators=ranked&season=s9", "", "")
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the board of no season: %d", resp.StatusCode)
	}
	resp = exchange(t, h, http.MethodGet, "/v1/leaderboard?game_type=duel&mutators=ranked&season=s1&rank=rating", "", "")
	if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, "rank") {
		t.Fatalf("a season's board by rating: %d %+v", resp.StatusCode, p)
	}
}

// A result's ended_at: an RFC 3339 time at most 5 minutes past the service's clock, else a
// 400 naming it; given, it is the result's time (the idle drift runs from it).
func TestResultEndedAt(t *testing.T) {
	t.Parallel()
	h, store := openServer(t)
	body := func(id, endedAt string) string {
		return fmt.Sprintf(`{"match_id":%q,"context":{"game_type":"duel"},"map":"arena","duration_s":600,"ended_at":%q,
			"teams":[{"side":"red","players":[{"id":"ann"}]},{"side":"blue","players":[{"id":"ben"}]}],"winner":0}`, id, endedAt)
	}
	for _, bad := range []string{"tomorrow", frozenClock().Add(6 * time.Minute).Format(time.RFC3339), "0001-01-01T00:00:00Z"} {
		resp := postResult(t, h, body("bad", bad))
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, "ended_at") {
			t.Errorf("ended_at %q: %d %+v, want a 400 naming ended_at", bad, resp.StatusCode, p)
		}
	}
	earlier := frozenClock().AddDate(0, -3, 0)
	if resp := postResult(t, h, body("m1", earlier.Format(time.RFC3339))); resp.StatusCode != http.StatusCreated {
		t.Fatalf("a past ended_at: %d %+v", resp.StatusCode, readProblem(t, resp))
	}
	c, _ := ratings.NewContext("duel", nil)
	got, err := store.Ratings(context.Background(), c, []ratings.Participant{{ID: "ann"}})
	if err != nil || got[ratings.Participant{ID: "ann"}].LastPlayed != earlier.Unix() {
		t.Fatalf("ann last played %+v (%v), want %d", got, err, earlier.Unix())
	}
	var mine playerRatingsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/players/ann/ratings", "", ""), &mine)
	stored := got[ratings.Participant{ID: "ann"}].Sigma
	if u := mine.Ratings[0].Uncertainty; !(u > stored) {
		t.Fatalf("three months idle: uncertainty %v, stored %v: want it grown", u, stored)
	}
}
