package handlers

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

func postMatchmake(t testing.TB, h http.Handler, body string) *http.Response {
	t.Helper()
	return exchange(t, h, http.MethodPost, "/v1/matchmake", "application/json", body)
}

func queuedPlayersJSON(ratings ...float64) string {
	var b strings.Builder
	b.WriteString(`[`)
	for i, r := range ratings {
		if i > 0 {
			b.WriteString(`,`)
		}
		fmt.Fprintf(&b, `{"id":"p%d","rating":%g}`, i, r)
	}
	b.WriteString(`]`)
	return b.String()
}

func TestMatchmakePairsEveryPlayerWithANearEqualOpponent(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	body := `{"team_size":2,"players":` + queuedPlayersJSON(1000, 1500, 1010, 990, 1025, 1490, 1510, 2000) + `}`
	resp := postMatchmake(t, h, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %+v", resp.StatusCode, readProblem(t, resp))
	}
	var got matchmakeResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Strategy != "rating_window" || got.TeamSize != 2 {
		t.Fatalf("defaults not reported: %s %d", got.Strategy, got.TeamSize)
	}
	// The oldest player (1000) anchors a match with 1010, 990 and 1025; the next oldest
	// left (1500) anchors one with 1490, 1510 and 2000, the only players left.
	if len(got.Matches) != 2 || len(got.Unmatched) != 0 {
		t.Fatalf("got %d matches and %d unmatched, want 2 and 0", len(got.Matches), len(got.Unmatched))
	}
	first := got.Matches[0]
	players := map[string]bool{}
	for _, team := range first.Teams {
		for _, id := range team.Players {
			players[id] = true
		}
	}
	for _, id := range []string{"p0", "p2", "p3", "p4"} {
		if !players[id] {
			t.Errorf("first match lacks %s: %+v", id, first.Teams)
		}
	}
	for _, m := range got.Matches {
		for _, p := range m.Pairs {
			if p.Difference > p.Interval {
				t.Errorf("pair %v differs by %g, more than its interval %g", p.Players, p.Difference, p.Interval)
			}
		}
	}
	if got.Matches[0].ID == "" || got.Matches[0].ID == got.Matches[1].ID {
		t.Errorf("match ids must be unique and present: %q %q", got.Matches[0].ID, got.Matches[1].ID)
	}
	if got.Stats.Players != 8 || got.Stats.Matches != 2 {
		t.Fatalf("stats = %+v", got.Stats)
	}
}

func TestMatchmakeRatesStatsWithTheThesisFormula(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	// eq. 6.5 with coefficients 0.5: (1000-200)*.5 + (1000-400)*.5 + 600*.5 + 800*.5 = 1400.
	body := `{"team_size":1,"players":[
		{"id":"a","stats":{"accuracy":0.2,"reaction_time":0.4,"awareness":0.6,"movement":0.8}},
		{"id":"b","rating":1390}]}`
	resp := postMatchmake(t, h, body)
	var got matchmakeResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Matches) != 1 {
		t.Fatalf("want one match, got %+v", got)
	}
	pair := got.Matches[0].Pairs[0]
	// With one player a side, a team's total is its player's rating.
	if pair.Players != [2]string{"a", "b"} || got.Matches[0].Teams[0].RatingTotal != 1400 || pair.Difference != 10 || pair.Interval != 25 {
		t.Fatalf("match = %+v", got.Matches[0])
	}
}

func TestMatchmakeReturnsPlayersItCannotPlace(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	body := `{"team_size":1,"interval":{"initial":10,"step":10,"max":50},"players":` +
		queuedPlayersJSON(1000, 1200, 1030, 1220, 1500) + `}`
	resp := postMatchmake(t, h, body)
	var got matchmakeResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Matches) != 2 {
		t.Fatalf("want 2 matches, got %d", len(got.Matches))
	}
	if len(got.Unmatched) != 1 || got.Unmatched[0].ID != "p4" || got.Unmatched[0].Rating != 1500 {
		t.Fatalf("unmatched = %+v, want p4 (1500)", got.Unmatched)
	}
	if got.Matches[0].Pairs[0].Interval != 30 {
		t.Fatalf("1000 vs 1030 should be accepted at the third step (30): %+v", got.Matches[0].Pairs[0])
	}
}

func TestMatchmakeEmptyQueueMakesNoMatches(t *testing.T) {
	t.Parallel()
	resp := postMatchmake(t, NewServer(Deps{}), `{"players":[]}`)
	var got matchmakeResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(got.Matches) != 0 || len(got.Unmatched) != 0 {
		t.Fatalf("status %d, %+v", resp.StatusCode, got)
	}
}

func TestMatchmakeRejectsBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 129)
	tests := []struct {
		name   string
		ctype  string
		body   string
		status int
		field  string
	}{
		{"malformed JSON", "", `{"players":[`, 400, "body"},
		{"not JSON at all", "", `hello`, 400, "body"},
		{"empty body", "", ``, 400, "body"},
		{"two JSON values", "", `{"players":[]} {}`, 400, "body"},
		{"players missing", "", `{}`, 400, "players"},
		{"players null", "", `{"players":null}`, 400, "players"},
		{"players not an array", "", `{"players":"abc"}`, 400, "players"},
		{"rating is a string", "", `{"players":[{"id":"a"},{"id":"b","rating":"high"}]}`, 400, "players[1].rating"},
		{"rating too large to be finite", "", `{"players":[{"id":"a","rating":1e400}]}`, 400, "players[0].rating"},
		{"rating beyond the sane range", "", `{"players":[{"id":"a","rating":1e301}]}`, 400, "players[0].rating"},
		{"id missing", "", `{"players":[{"rating":1}]}`, 400, "players[0].id"},
		{"id empty", "", `{"players":[{"id":""}]}`, 400, "players[0].id"},
		{"id too long", "", `{"players":[{"id":"` + long + `"}]}`, 400, "players[0].id"},
		{"id a number", "", `{"players":[{"id":7}]}`, 400, "players[0].id"},
		{"id with a NUL", "", `{"players":[{"id":"a\u0000b"}]}`, 400, "players[0].id"},
		{"id with a control character", "", `{"players":[{"id":"a\u0007b"}]}`, 400, "players[0].id"},
		{"id with white space", "", `{"players":[{"id":"a\u00a0b"}]}`, 400, "players[0].id"},
		{"id with two spaces", "", `{"players":[{"id":"a  b"}]}`, 400, "players[0].id"},
		{"id of invalid UTF-8", "", "{\"players\":[{\"id\":\"a\xffb\"}]}", 400, "body"},
		{"duplicate id", "", `{"players":[{"id":"a"},{"id":"b"},{"id":"a"}]}`, 400, "players[2].id"},
		{"rating and stats", "", `{"players":[{"id":"a","rating":1,"stats":{"accuracy":0,"reaction_time":0,"awareness":0,"movement":0}}]}`, 400, "players[0]"},
		{"stat above 1", "", `{"players":[{"id":"a","stats":{"accuracy":1.5,"reaction_time":0,"awareness":0,"movement":0}}]}`, 400, "players[0].stats.accuracy"},
		{"stat below 0", "", `{"players":[{"id":"a","stats":{"accuracy":0,"reaction_time":-0.1,"awareness":0,"movement":0}}]}`, 400, "players[0].stats.reaction_time"},
		{"stat missing", "", `{"players":[{"id":"a","stats":{"accuracy":0,"reaction_time":0,"awareness":0}}]}`, 400, "players[0].stats.movement"},
		{"unknown player field", "", `{"players":[{"id":"a","ratin":1}]}`, 400, "players[0].ratin"},
		{"unknown top-level field", "", `{"players":[],"teamsize":5}`, 400, "teamsize"},
		{"unknown stats field", "", `{"players":[{"id":"a","stats":{"aim":1}}]}`, 400, "players[0].stats.aim"},
		{"team_size zero", "", `{"players":[],"team_size":0}`, 400, "team_size"},
		{"team_size 17", "", `{"players":[],"team_size":17}`, 400, "team_size"},
		{"team_size fractional", "", `{"players":[],"team_size":2.5}`, 400, "team_size"},
		{"step zero", "", `{"players":[],"interval":{"step":0}}`, 400, "interval.step"},
		{"step negative", "", `{"players":[],"interval":{"step":-5}}`, 400, "interval.step"},
		{"initial negative", "", `{"players":[],"interval":{"initial":-1}}`, 400, "interval.initial"},
		{"max below initial", "", `{"players":[],"interval":{"initial":50,"max":25}}`, 400, "interval.max"},
		{"unknown strategy", "", `{"players":[],"strategy":"random"}`, 400, "strategy"},
		{"coefficient above 1", "", `{"players":[],"coefficients":{"awareness":2}}`, 400, "coefficients.awareness"},
		{"wrong content type", "text/plain", `{"players":[]}`, 415, "Content-Type"},
		{"no content type", "none", `{"players":[]}`, 415, "Content-Type"},
	}
	h := NewServer(Deps{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctype := tt.ctype
			switch ctype {
			case "":
				ctype = "application/json"
			case "none":
				ctype = ""
			}
			resp := exchange(t, h, http.MethodPost, "/v1/matchmake", ctype, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			p := readProblem(t, resp)
			if !hasField(p, tt.field) {
				t.Fatalf("problem does not name %q: %+v", tt.field, p.Errors)
			}
		})
	}
}

func TestMatchmakeEnforcesTheLimits(t *testing.T) {
	t.Parallel()
	limits := DefaultLimits()
	limits.MaxMatchmakePlayers = 3
	limits.MaxBodyBytes = 2048
	h := NewServer(Deps{Limits: limits})

	resp := postMatchmake(t, h, `{"players":`+queuedPlayersJSON(1, 2, 3, 4)+`}`)
	if p := readProblem(t, resp); resp.StatusCode != 400 || !hasField(p, "players") {
		t.Fatalf("too many players: %d %+v", resp.StatusCode, p)
	}
	big := `{"players":[{"id":"` + strings.Repeat("a", 4096) + `"}]}`
	resp = postMatchmake(t, h, big)
	if p := readProblem(t, resp); resp.StatusCode != 413 || !hasField(p, "body") {
		t.Fatalf("oversized body: %d %+v", resp.StatusCode, p)
	}
}

func TestMatchmakeCountsMatchesInMetrics(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	postMatchmake(t, h, `{"team_size":1,"strategy":"greedy_pairs","players":`+queuedPlayersJSON(1, 2, 3, 4, 900)+`}`)
	text := readAll(t, exchange(t, h, http.MethodGet, "/metrics", "", ""))
	for _, want := range []string{
		`matchmaker_matches_total{strategy="greedy_pairs"} 2`,
		`matchmaker_unmatched_players_total{strategy="greedy_pairs"} 1`,
		`matchmaker_http_request_duration_seconds_count{code="200",method="POST",route="/v1/matchmake"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// FuzzMatchmake feeds the decoder and the handler arbitrary bodies: whatever arrives, the
// answer is a 200 or a 4xx problem that validates against the spec, never a 5xx or a panic.
func FuzzMatchmake(f *testing.F) {
	f.Add(`{"players":[{"id":"a","rating":1},{"id":"b","rating":2}],"team_size":1}`)
	f.Add(`{"players":[{"id":"a","stats":{"accuracy":0.1,"reaction_time":0.2,"awareness":0.3,"movement":0.4}}]}`)
	f.Add(`{"players":[],"interval":{"initial":0,"step":1e-300,"max":1e12}}`)
	f.Add(`{"players":[{"id":"a","rating":-1e12},{"id":"b","rating":1e12}],"team_size":1,"interval":{"initial":0,"step":1e-9}}`)
	f.Add(`{"players":[{"id":"a"},{"id":"a"}],"strategy":"greedy_pairs"}`)
	f.Add(`{"players":[{"id":"\u0000"}],"default_rating":-0}`)
	f.Add(`[1,2,3]`)
	f.Add(`{"players":[{"id":"a","rating":1}]}{`)
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString(`{"team_size":3,"players":[`)
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"p%d","rating":%d}`, i, rng.IntN(100))
	}
	b.WriteString(`]}`)
	f.Add(b.String())
	h := NewServer(Deps{})
	f.Fuzz(func(t *testing.T, body string) {
		resp := postMatchmake(t, h, body)
		if resp.StatusCode >= 500 {
			t.Fatalf("status %d for %q", resp.StatusCode, body)
		}
	})
}

func TestMatchmakeUsesStoredRatingsInTheRequestsContext(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	// alice and bob win three times against carol and dave: their stored weights rise above 50.
	for i := range 3 {
		postResult(t, h, resultBody(fmt.Sprintf("m%d", i), 0))
	}
	body := `{"team_size":1,"context":{"game_type":"ctf"},"players":[
		{"id":"alice"},{"id":"newcomer"},{"id":"carol"},{"id":"anchor","rating":1000}]}`
	var got matchmakeResponse
	decodeJSON(t, postMatchmake(t, h, body), &got)
	rating := map[string]float64{}
	for _, m := range got.Matches { // team_size 1: a team's total is its player's rating
		for _, team := range m.Teams {
			rating[team.Players[0]] = team.RatingTotal
		}
	}
	if !(rating["alice"] > 1000 && rating["carol"] < 1000 && rating["newcomer"] == 1000) {
		t.Fatalf("stored weights x 20 for known players, 1000 for the newcomer: %v", rating)
	}

	resp := postMatchmake(t, h, `{"context":{"game_type":"no spaces allowed"},"players":[{"id":"a"}]}`)
	if p := readProblem(t, resp); resp.StatusCode != 400 || !hasField(p, "context.game_type") {
		t.Fatalf("bad context: %d %+v", resp.StatusCode, p)
	}
}
