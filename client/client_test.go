package client_test

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/handlers"
)

// service is the real HTTP handler on a fresh in-memory rating store, behind a real listener.
func service(t *testing.T, auth *handlers.Auth) string {
	t.Helper()
	srv := httptest.NewServer(handlers.NewServer(handlers.Deps{Auth: auth}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// What a game backend does with the client: queue players into a match, record the match's
// result, read the ratings it moved, and split a server's players on those ratings.
func TestClientMatchmakesRecordsAResultAndReadsTheRatingsBack(t *testing.T) {
	t.Parallel()
	c, err := client.New(service(t, &handlers.Auth{Off: true}), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	// A 2v2 queue; erin is too far from the others to be matched. "zoë/eu" needs escaping in
	// a path, which the ratings read below goes through.
	mm, err := c.MatchmakeWithResponse(ctx, client.MatchmakeRequest{
		TeamSize: new(int32(2)),
		Players: []client.QueuedPlayer{
			{Id: "alice", Rating: new(1010.0)},
			{Id: "bob", Rating: new(990.0)},
			{Id: "zoë/eu", Rating: new(1000.0)},
			{Id: "dave", Rating: new(1025.0)},
			{Id: "erin", Rating: new(1500.0)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if mm.JSON200 == nil {
		t.Fatalf("matchmake: status %d: %s", mm.StatusCode(), mm.Body)
	}
	out := mm.JSON200
	if len(out.Matches) != 1 || len(out.Unmatched) != 1 || out.Unmatched[0].Id != "erin" {
		t.Fatalf("want one match and erin unmatched, got %+v", out)
	}
	match := out.Matches[0]
	var matched []string
	for _, team := range match.Teams {
		if len(team.Players) != 2 {
			t.Fatalf("a 2v2 team has %v", team.Players)
		}
		matched = append(matched, team.Players...)
	}
	slices.Sort(matched)
	if want := []string{"alice", "bob", "dave", "zoë/eu"}; !slices.Equal(matched, want) {
		t.Fatalf("matched %v, want %v", matched, want)
	}
	if out.Strategy != client.MatchmakeOutcomeStrategyRatingWindow || out.Stats.Matches != 1 || out.Stats.Players != 5 {
		t.Errorf("strategy %q, stats %+v", out.Strategy, out.Stats)
	}

	// The match's result, under the id the matchmaker gave it: team 0 wins.
	result := client.ResultRequest{
		MatchId:   match.Id,
		Context:   client.Context{GameType: "ctf"},
		Map:       "ctf-face",
		DurationS: 1200,
		Winner:    new(int32(0)),
	}
	for i, team := range match.Teams {
		rt := client.ResultTeam{Side: []string{"red", "blue"}[i]}
		for _, id := range team.Players {
			rt.Players = append(rt.Players, client.ResultParticipant{Id: new(id)})
		}
		result.Teams = append(result.Teams, rt)
	}
	rec, err := c.RecordResultWithResponse(ctx, result)
	if err != nil {
		t.Fatal(err)
	}
	if rec.JSON201 == nil {
		t.Fatalf("result: status %d: %s", rec.StatusCode(), rec.Body)
	}
	if rec.Headers201.IdempotentReplayed != nil {
		t.Errorf("a first report is not a replay, got Idempotent-Replayed %q", *rec.Headers201.IdempotentReplayed)
	}
	if rec.JSON201.MatchId != match.Id || rec.JSON201.Context.Key != "ctf" || len(rec.JSON201.Updates) != 4 {
		t.Fatalf("result response %+v", rec.JSON201)
	}
	weights := map[string]float64{}
	for _, u := range rec.JSON201.Updates {
		if u.Id == nil {
			t.Fatalf("an update without a player id: %+v", u)
		}
		if won := u.Team == 0; won != (u.After > u.Before) || u.Games != 1 {
			t.Errorf("%s on team %d: %g -> %g after %d games", *u.Id, u.Team, u.Before, u.After, u.Games)
		}
		weights[*u.Id] = u.Weight
	}

	// Reporting the same match again replays the first answer and changes nothing.
	again, err := c.RecordResultWithResponse(ctx, result)
	if err != nil {
		t.Fatal(err)
	}
	if again.StatusCode() != http.StatusCreated || again.Headers201.IdempotentReplayed == nil ||
		*again.Headers201.IdempotentReplayed != "true" || !bytes.Equal(again.Body, rec.Body) {
		t.Errorf("replay: status %d, headers %+v, body %s", again.StatusCode(), again.Headers201, again.Body)
	}

	// Each player's ratings, one at a time (the id goes in the path) and in one batch.
	for _, id := range matched {
		pr, err := c.GetPlayerRatingsWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if pr.JSON200 == nil || pr.JSON200.Id != id || len(pr.JSON200.Ratings) != 1 {
			t.Fatalf("ratings of %q: status %d: %s", id, pr.StatusCode(), pr.Body)
		}
		r := pr.JSON200.Ratings[0]
		if r.Context.Key != "ctf" || r.Games != 1 || r.Weight != weights[id] {
			t.Errorf("%s: %+v, want one game in ctf at weight %g", id, r, weights[id])
		}
	}
	batch, err := c.GetRatingsWithResponse(ctx, &client.GetRatingsParams{
		GameType: "ctf",
		Ids:      new(strings.Join(append(slices.Clone(matched), "zed"), ",")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if batch.JSON200 == nil || len(batch.JSON200.Ratings) != 5 {
		t.Fatalf("batch ratings: status %d: %s", batch.StatusCode(), batch.Body)
	}
	for _, r := range batch.JSON200.Ratings {
		if id := *r.Id; r.Known != (id != "zed") || (r.Known && r.Weight != weights[id]) {
			t.Errorf("%s: known %v weight %g, want the weight %g from the result", id, r.Known, r.Weight, weights[id])
		}
	}

	// A server's split with no weights given: the stored ones from the result are used.
	split, err := c.SplitTeamsWithResponse(ctx, client.TeamsRequest{
		Players: []client.TeamPlayer{{Id: "alice"}, {Id: "bob"}, {Id: "zoë/eu"}, {Id: "dave"}},
		Context: &client.Context{GameType: "ctf"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if split.JSON200 == nil {
		t.Fatalf("split: status %d: %s", split.StatusCode(), split.Body)
	}
	teams := split.JSON200
	if len(teams.Teams) != 2 || len(teams.Teams[0].Players) != 2 || len(teams.Teams[1].Players) != 2 || !teams.Exact {
		t.Errorf("want an exact 2v2 split, got %+v", teams)
	}
	for id, w := range weights {
		if teams.Weights[id] != w {
			t.Errorf("split weight of %s = %g, want the stored %g", id, teams.Weights[id], w)
		}
	}
}

// New sends the key as a bearer token; without one, a protected endpoint's problem document
// comes back decoded.
func TestNewSendsTheAPIKey(t *testing.T) {
	t.Parallel()
	key := func(name, secret string, scopes ...handlers.Scope) handlers.APIKey {
		return handlers.APIKey{Name: name, Scopes: scopes, Hash: sha256.Sum256([]byte(secret))}
	}
	url := service(t, &handlers.Auth{Keys: []handlers.APIKey{
		key("backend", "backend-secret", handlers.ScopeRead, handlers.ScopeMatch, handlers.ScopeResults),
		key("dashboard", "dashboard-secret", handlers.ScopeRead),
	}})
	body := client.MatchmakeRequest{TeamSize: new(int32(1)), Players: []client.QueuedPlayer{
		{Id: "alice", Rating: new(1000.0)}, {Id: "bob", Rating: new(1010.0)},
	}}
	for _, tc := range []struct {
		apiKey string
		status int
	}{
		{"backend-secret", http.StatusOK},
		{"", http.StatusUnauthorized},
		{"not-a-key", http.StatusUnauthorized},
		{"dashboard-secret", http.StatusForbidden},
	} {
		c, err := client.New(url, tc.apiKey)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.MatchmakeWithResponse(t.Context(), body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != tc.status {
			t.Errorf("key %q: status %d, want %d: %s", tc.apiKey, resp.StatusCode(), tc.status, resp.Body)
			continue
		}
		var problem *client.Problem
		switch tc.status {
		case http.StatusOK:
			if resp.JSON200 == nil || len(resp.JSON200.Matches) != 1 {
				t.Errorf("key %q: want one match, got %s", tc.apiKey, resp.Body)
			}
			continue
		case http.StatusUnauthorized:
			problem = resp.ApplicationproblemJSON401
		case http.StatusForbidden:
			problem = resp.ApplicationproblemJSON403
		}
		if problem == nil || problem.Status != int32(tc.status) || problem.Type == "" {
			t.Errorf("key %q: want a decoded problem document, got %s", tc.apiKey, resp.Body)
		}
	}
}

// A request the service rejects comes back as a decoded problem naming the bad field.
func TestClientDecodesValidationProblems(t *testing.T) {
	t.Parallel()
	c, err := client.New(service(t, &handlers.Auth{Off: true}), "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.MatchmakeWithResponse(t.Context(), client.MatchmakeRequest{
		TeamSize: new(int32(0)),
		Players:  []client.QueuedPlayer{{Id: "alice", Rating: new(1000.0)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := resp.ApplicationproblemJSON400
	if resp.StatusCode() != http.StatusBadRequest || p == nil || p.Errors == nil {
		t.Fatalf("status %d: %s", resp.StatusCode(), resp.Body)
	}
	if !slices.ContainsFunc(*p.Errors, func(e client.FieldError) bool { return e.Field == "team_size" }) {
		t.Errorf("errors %+v do not name team_size", *p.Errors)
	}
}
