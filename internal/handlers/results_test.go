package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// openServer is a server with auth off on a fresh in-memory store, for tests about behaviour
// rather than access.
func openServer(t testing.TB) (http.Handler, ratings.Store) {
	t.Helper()
	store := ratings.NewMemoryStore(nil)
	svc := ratings.NewService(store, ratings.DefaultModel())
	svc.SetClock(frozenClock) // reads at another moment than the results see another idle drift
	return NewServer(Deps{Ratings: svc, Auth: &Auth{Off: true}}), store
}

// frozenClock is the time of the handler tests' services.
func frozenClock() time.Time { return time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) }

// resultBody is a 2v2 ctf result in which team winner (or nobody, for -1) won.
func resultBody(matchID string, winner int, players ...string) string {
	if len(players) == 0 {
		players = []string{"alice", "bob", "carol", "dave"}
	}
	w := "null"
	if winner >= 0 {
		w = fmt.Sprint(winner)
	}
	return fmt.Sprintf(`{"match_id":%q,"context":{"game_type":"ctf","mutators":["instagib"]},"map":"ctf-face",
		"duration_s":1200,"teams":[
		{"side":"red","players":[{"id":%q},{"id":%q,"joined_s":300}]},
		{"side":"blue","players":[{"id":%q},{"id":%q,"left_s":900},{"bot":"Jakob"}]}],
		"winner":%s}`, matchID, players[0], players[1], players[2], players[3], w)
}

func postResult(t testing.TB, h http.Handler, body string, headers ...string) *http.Response {
	t.Helper()
	return exchange(t, h, http.MethodPost, "/v1/results", "application/json", body, headers...)
}

func TestResultsMoveTheWinnersUpAndTheLosersDown(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	resp := postResult(t, h, resultBody("m1", 0))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d: %+v", resp.StatusCode, readProblem(t, resp))
	}
	var got resultResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Context.Key != "ctf" {
		t.Errorf("context = %q: instagib is not known to affect gameplay yet, so it must not split", got.Context.Key)
	}
	if p := got.WinProbability; p[0] <= 0 || p[1] <= 0 || p[0]+p[1] < 0.999 || p[0]+p[1] > 1.001 {
		t.Errorf("win probabilities %v must be a distribution", p)
	}
	if len(got.Updates) != 5 {
		t.Fatalf("want 5 updates (4 players and a bot), got %d", len(got.Updates))
	}
	for _, u := range got.Updates {
		won := u.Team == 0
		if won != (u.After > u.Before) || u.Games != 1 {
			t.Errorf("%s%s on team %d: %g -> %g after %d games", u.ID, u.Bot, u.Team, u.Before, u.After, u.Games)
		}
	}
}

func TestResultsAreIdempotentByMatchID(t *testing.T) {
	t.Parallel()
	h, store := openServer(t)
	first := postResult(t, h, resultBody("m1", 0))
	firstBody := readAll(t, first)

	// The same result again, formatted differently: the first answer, nothing changes.
	again := postResult(t, h, strings.Join(strings.Fields(resultBody("m1", 0)), " "))
	if again.StatusCode != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: status %d, Idempotent-Replayed %q", again.StatusCode, again.Header.Get("Idempotent-Replayed"))
	}
	if got := readAll(t, again); got != firstBody {
		t.Fatalf("a replay must answer the first response:\n%s\n%s", firstBody, got)
	}
	c, _ := ratings.NewContext("ctf", nil)
	stored, err := store.Ratings(t.Context(), c, []ratings.Participant{{ID: "alice"}})
	if err != nil || stored[ratings.Participant{ID: "alice"}].Games != 1 {
		t.Fatalf("alice after a replay: %+v, %v; want 1 game", stored, err)
	}

	// The same id with another outcome is a conflict.
	conflict := postResult(t, h, resultBody("m1", 1))
	if conflict.StatusCode != http.StatusConflict {
		t.Fatalf("reused match id: status %d", conflict.StatusCode)
	}
}

func TestResultsRejectBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	valid := resultBody("m1", 0)
	tests := []struct {
		name  string
		body  string
		field string
	}{
		{"left before joined", strings.Replace(valid, `{"id":"bob","joined_s":300}`, `{"id":"bob","joined_s":300,"left_s":100}`, 1), "teams[0].players[1].left_s"},
		{"winner out of range", strings.Replace(valid, `"winner":0`, `"winner":2`, 1), "winner"},
		{"winner not an index", strings.Replace(valid, `"winner":0`, `"winner":"red"`, 1), "winner"},
		{"winner missing", strings.Replace(valid, `,
		"winner":0`, ``, 1), "winner"},
		{"player on both teams", strings.Replace(valid, `{"id":"carol"}`, `{"id":"alice"}`, 1), "teams[1].players[0].id"},
		{"three teams", strings.Replace(valid, `]}],`, `]},{"side":"green","players":[{"id":"zed"}]}],`, 1), "teams"},
		{"non-finite duration", strings.Replace(valid, `"duration_s":1200`, `"duration_s":1e999`, 1), "duration_s"},
		{"negative joined", strings.Replace(valid, `"joined_s":300`, `"joined_s":-1`, 1), "teams[0].players[1].joined_s"},
		{"id and bot", strings.Replace(valid, `{"bot":"Jakob"}`, `{"bot":"Jakob","id":"x"}`, 1), "teams[1].players[2].bot"},
		{"neither id nor bot", strings.Replace(valid, `{"bot":"Jakob"}`, `{"joined_s":0}`, 1), "teams[1].players[2].id"},
		{"same sides", strings.Replace(valid, `"side":"blue"`, `"side":"red"`, 1), "teams[1].side"},
		{"game type missing", strings.Replace(valid, `"game_type":"ctf",`, ``, 1), "context.game_type"},
		{"match id missing", strings.Replace(valid, `"match_id":"m1",`, ``, 1), "match_id"},
		{"commander longer than stay", strings.Replace(valid, `{"id":"carol"}`, `{"id":"carol","commander_s":5000}`, 1), "teams[1].players[0].commander_s"},
		{"unknown field", strings.Replace(valid, `"map":`, `"mapp":"x","map":`, 1), "mapp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := openServer(t)
			resp := postResult(t, h, tt.body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400", resp.StatusCode)
			}
			if p := readProblem(t, resp); !hasField(p, tt.field) {
				t.Fatalf("problem does not name %q: %+v", tt.field, p.Errors)
			}
			// Nothing half-written: the match id is still free.
			if resp := postResult(t, h, valid); resp.StatusCode != http.StatusCreated {
				t.Fatalf("after a rejected result the valid one answers %d", resp.StatusCode)
			}
		})
	}
}

func TestResultsNeedAKeyWithTheResultsScope(t *testing.T) {
	t.Parallel()
	if resp := postResult(t, NewServer(Deps{}), resultBody("m1", 0)); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no keys configured: results must answer 401, got %d", resp.StatusCode)
	}
	keys, _ := ParseAPIKeys("game:results:" + HashKey("g") + ",dash:read:" + HashKey("d"))
	h := NewServer(Deps{Auth: &Auth{Keys: keys}})
	if resp := postResult(t, h, resultBody("m1", 0), "Authorization", "Bearer d"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("read key: %d, want 403", resp.StatusCode)
	}
	if resp := postResult(t, h, resultBody("m1", 0), "Authorization", "Bearer g"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("results key: %d, want 201", resp.StatusCode)
	}
}

func TestReadsShowWhatResultsTaught(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	for i := range 3 {
		postResult(t, h, resultBody(fmt.Sprintf("m%d", i), 0))
	}
	get := func(path string) *http.Response { return exchange(t, h, http.MethodGet, path, "", "") }

	var player playerRatingsResponse
	decodeJSON(t, get("/v1/players/alice/ratings"), &player)
	if len(player.Ratings) != 1 || player.Ratings[0].Games != 3 || player.Ratings[0].Weight <= 50 {
		t.Fatalf("alice won 3 games: %+v", player)
	}
	var none playerRatingsResponse
	if decodeJSON(t, get("/v1/players/nobody/ratings"), &none); len(none.Ratings) != 0 {
		t.Fatalf("unknown player: %+v", none)
	}

	var batch batchRatingsResponse
	decodeJSON(t, get("/v1/ratings?game_type=ctf&mutators=instagib&ids=alice,zed&bots=Jakob"), &batch)
	if len(batch.Ratings) != 3 || !batch.Ratings[0].Known || batch.Ratings[1].Known || batch.Ratings[1].Weight != 50 ||
		batch.Ratings[2].Bot != "Jakob" || batch.Ratings[2].Weight >= 50 {
		t.Fatalf("batch: %+v", batch)
	}

	var board leaderboardResponse
	decodeJSON(t, get("/v1/leaderboard?game_type=ctf&limit=2"), &board)
	if len(board.Players) != 2 || board.Players[0].Rank != 1 || board.Players[0].Rating < board.Players[1].Rating {
		t.Fatalf("leaderboard: %+v", board)
	}

	var bots botMeanResponse
	decodeJSON(t, get("/v1/bots/mean?game_type=ctf"), &bots)
	if bots.Count != 1 || bots.MeanWeight >= 50 {
		t.Fatalf("the losing bot's mean: %+v", bots)
	}
}

// Every read carries the uncertainty; the conservative leaderboard keeps a lucky newcomer,
// who tops the board by rating after three wins over a veteran, below the veterans.
func TestConservativeLeaderboardKeepsALuckyNewcomerDown(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	duel := func(id, winner, loser string) {
		body := fmt.Sprintf(`{"match_id":%q,"context":{"game_type":"duel"},"map":"m","duration_s":600,"teams":[
			{"side":"a","players":[{"id":%q}]},{"side":"b","players":[{"id":%q}]}],"winner":0}`, id, winner, loser)
		if resp := postResult(t, h, body); resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s: %+v", id, readProblem(t, resp))
		}
	}
	vets := []string{"v0", "v1", "v2", "v3", "v4", "v5"}
	n := 0
	for r := range 8 { // veterans as good as each other: each wins half their duels
		for i := range vets {
			for j := i + 1; j < len(vets); j++ {
				n++
				if (i+j+r)%2 == 0 {
					duel(fmt.Sprintf("d%d", n), vets[i], vets[j])
				} else {
					duel(fmt.Sprintf("d%d", n), vets[j], vets[i])
				}
			}
		}
	}
	for i := range 3 {
		duel(fmt.Sprintf("lucky%d", i), "lucky", "v0")
	}
	get := func(path string) leaderboardResponse {
		var board leaderboardResponse
		decodeJSON(t, exchange(t, h, http.MethodGet, path, "", ""), &board)
		return board
	}
	byRating, conservative := get("/v1/leaderboard?game_type=duel&limit=7"), get("/v1/leaderboard?game_type=duel&limit=7&rank=conservative")
	if byRating.RankedBy != "rating" || byRating.K != 0 || conservative.RankedBy != "conservative" || conservative.K != ratings.ConservativeK {
		t.Fatalf("ranked by %s (k %v) and %s (k %v)", byRating.RankedBy, byRating.K, conservative.RankedBy, conservative.K)
	}
	ids := func(b leaderboardResponse) (out []string) {
		for _, e := range b.Players {
			out = append(out, e.ID)
			if e.Uncertainty <= 0 || e.Conservative != e.Rating-b.K*e.Uncertainty {
				t.Errorf("%s: uncertainty %v, conservative %v, rating %v, k %v", e.ID, e.Uncertainty, e.Conservative, e.Rating, b.K)
			}
		}
		return out
	}
	top, safe := ids(byRating), ids(conservative)
	if top[0] != "lucky" {
		t.Fatalf("by rating %q: want the lucky newcomer first (else the test shows nothing)", top)
	}
	if safe[len(safe)-1] != "lucky" {
		t.Errorf("conservative board %q: want the newcomer last", safe)
	}
	lucky, vet := byRating.Players[0], byRating.Players[1]
	if lucky.Uncertainty <= vet.Uncertainty {
		t.Errorf("the newcomer after 3 games is not less certain than a veteran after 40: %+v, %+v", lucky, vet)
	}
	var player playerRatingsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/players/lucky/ratings", "", ""), &player)
	var batch batchRatingsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/ratings?game_type=duel&ids=lucky,nobody", "", ""), &batch)
	if player.Ratings[0].Uncertainty != lucky.Uncertainty || batch.Ratings[0].Uncertainty != lucky.Uncertainty ||
		batch.Ratings[1].Uncertainty != ratings.DefaultKalman().SkillSD {
		t.Errorf("uncertainties: player %+v, batch %+v, leaderboard %+v", player.Ratings, batch.Ratings, lucky)
	}
}

// A path segment is unescaped once: a%2Fb is the player "a/b" and %41lice is "Alice".
func TestPlayerRatingsUnescapeTheIDOnce(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	postResult(t, h, resultBody("m1", 0, "a/b", "Alice", "carol", "dave"))
	for path, want := range map[string]string{
		"/v1/players/a%2Fb/ratings":   "a/b",
		"/v1/players/%41lice/ratings": "Alice",
		"/v1/players/a%252Fb/ratings": "a%2Fb", // escaped twice: unescaped once only
	} {
		var got playerRatingsResponse
		decodeJSON(t, exchange(t, h, http.MethodGet, path, "", ""), &got)
		if got.ID != want {
			t.Errorf("%s: id %q, want %q", path, got.ID, want)
		}
		if known := want != "a%2Fb"; known != (len(got.Ratings) == 1) {
			t.Errorf("%s: %d ratings, want them only for a player who played", path, len(got.Ratings))
		}
	}
}

func TestReadsRejectBadQueries(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	tests := []struct{ path, field string }{
		{"/v1/ratings?ids=a", "game_type"},
		{"/v1/ratings?game_type=ctf", "ids"},
		{"/v1/ratings?game_type=ctf&ids=a,,b", "ids"},
		{"/v1/ratings?game_type=bad%20name&ids=a", "game_type"},
		{"/v1/ratings?game_type=ctf&mutators=instagib,bad%20one&ids=a", "mutators"},
		{"/v1/leaderboard?game_type=ctf&limit=0", "limit"},
		{"/v1/leaderboard?game_type=ctf&limit=x", "limit"},
		{"/v1/leaderboard?game_type=ctf&rank=best", "rank"},
		{"/v1/bots/mean", "game_type"},
		{"/v1/players/" + strings.Repeat("x", 129) + "/ratings", "id"},
		{"/v1/players/a%00b/ratings", "id"},
		{"/v1/players/a%FFb/ratings", "id"},
		{"/v1/players/%20ab/ratings", "id"},
		{"/v1/ratings?game_type=ctf&ids=a%00b", "ids"},
		{"/v1/ratings?game_type=ctf&ids=a%FFb", "ids"},
		{"/v1/ratings?game_type=ctf&bots=a%0Ab", "bots"},
	}
	for _, tt := range tests {
		resp := exchange(t, h, http.MethodGet, tt.path, "", "")
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d", tt.path, resp.StatusCode)
			continue
		}
		if p := readProblem(t, resp); !hasField(p, tt.field) {
			t.Errorf("%s: problem does not name %q: %+v", tt.path, tt.field, p.Errors)
		}
	}
}

func TestMutatorPolicySplitsContextsAfterARebuild(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	postResult(t, h, resultBody("m1", 0))

	var list mutatorsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/mutators", "", ""), &list)
	if len(list.Mutators) != 1 || list.Mutators[0].Name != "instagib" || list.Mutators[0].Status != "unknown" {
		t.Fatalf("the unknown mutator must be recorded: %+v", list)
	}
	resp := exchange(t, h, http.MethodPut, "/v1/mutators/instagib", "application/json", `{"affects_gameplay":true}`)
	var m mutatorJSON
	if decodeJSON(t, resp, &m); !m.AffectsGameplay || m.Status != "gameplay" {
		t.Fatalf("set: %+v", m)
	}
	var report rebuildResponse
	decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/ratings/rebuild?game_type=ctf", "", ""), &report)
	if report.Results != 1 || report.Contexts != 1 {
		t.Fatalf("rebuild: %+v", report)
	}
	var player playerRatingsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/players/alice/ratings", "", ""), &player)
	if len(player.Ratings) != 1 || player.Ratings[0].Context.Key != "ctf+instagib" {
		t.Fatalf("after the rebuild alice's rating lives in ctf+instagib: %+v", player)
	}

	if resp := exchange(t, h, http.MethodPut, "/v1/mutators/instagib", "application/json", `{}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("missing affects_gameplay: %d", resp.StatusCode)
	}
	if resp := exchange(t, h, http.MethodPost, "/v1/ratings/rebuild", "", ""); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("rebuild without game_type: %d", resp.StatusCode)
	}
}

func TestAdminEndpointsNeedTheAdminScope(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	if resp := exchange(t, h, http.MethodPut, "/v1/mutators/instagib", "application/json", `{"affects_gameplay":true}`); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no keys: %d, want 401", resp.StatusCode)
	}
	if resp := exchange(t, h, http.MethodPost, "/v1/ratings/rebuild?game_type=ctf", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no keys: %d, want 401", resp.StatusCode)
	}
}

func decodeJSON(t testing.TB, resp *http.Response, v any) {
	t.Helper()
	if resp.StatusCode >= 300 {
		t.Fatalf("status %d: %+v", resp.StatusCode, readProblem(t, resp))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// FuzzResults feeds /v1/results arbitrary bodies: a 201 or a 4xx problem that validates
// against the spec, never a 5xx or a panic; and a rejected body never takes its match id.
func FuzzResults(f *testing.F) {
	f.Add(resultBody("m1", 0))
	f.Add(resultBody("m2", -1))
	f.Add(`{"match_id":"x","context":{"game_type":"tdm"},"map":"m","duration_s":1,"teams":[{"side":"a","players":[{"bot":"b","left_s":1e-300}]},{"side":"b","players":[{"id":"p","commander_s":1}]}],"winner":1}`)
	f.Add(`{"match_id":"x","winner":null,"teams":[]}`)
	f.Add(`{"teams":[{"players":[{"id":"a","joined_s":5,"left_s":5}]}]}`)
	h, _ := openServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		resp := postResult(t, h, body)
		if resp.StatusCode >= 500 {
			t.Fatalf("status %d for %q", resp.StatusCode, body)
		}
	})
}
