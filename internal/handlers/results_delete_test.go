package handlers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// ratingsOf is GET /v1/ratings of resultBody's participants in ctf, as the server answers it.
func ratingsOf(t *testing.T, h http.Handler) string {
	t.Helper()
	resp := exchange(t, h, http.MethodGet, "/v1/ratings?game_type=ctf&ids=alice,bob,carol,dave,erin&bots=Jakob", "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ratings: %d %s", resp.StatusCode, readAll(t, resp))
	}
	return readAll(t, resp)
}

// Deleting a result leaves every rating as a server that never saw it has them, answers the
// result as stored, and lets the match id be posted again.
func TestDeleteResultRebuildsAsIfNeverPosted(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	clean, _ := openServer(t)
	posted := []string{
		resultBody("m1", 0),
		resultBody("m2", 1, "alice", "erin", "carol", "dave"),
		resultBody("m3", -1),
	}
	for i, body := range posted {
		if resp := postResult(t, h, body); resp.StatusCode != http.StatusCreated {
			t.Fatalf("post %d: %d %s", i, resp.StatusCode, readAll(t, resp))
		}
		if i != 1 {
			postResult(t, clean, body)
		}
	}
	if ratingsOf(t, h) == ratingsOf(t, clean) {
		t.Fatal("the two servers agree before the deletion: the test proves nothing")
	}

	resp := exchange(t, h, http.MethodDelete, "/v1/results/m2", "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d %s", resp.StatusCode, readAll(t, resp))
	}
	var got resultDeletion
	decodeJSON(t, resp, &got)
	if got.MatchID != "m2" || got.Result.MatchID != "m2" || got.Result.Winner == nil || *got.Result.Winner != 1 ||
		got.Result.Teams[0].Players[1].ID != "erin" || *got.Result.Teams[0].Players[1].JoinedS != 300 ||
		got.Rebuild.GameType != "ctf" || got.Rebuild.Results != 2 {
		t.Fatalf("deletion %+v", got)
	}
	if a, b := ratingsOf(t, h), ratingsOf(t, clean); a != b {
		t.Fatalf("after the deletion:\n%s\nthe server that never saw it:\n%s", a, b)
	}

	// The answer's result is a body POST /v1/results takes: posted again, it is recorded anew.
	again := resultBody("m2", 0, "alice", "erin", "carol", "dave") // corrected: red won
	if resp := postResult(t, h, again); resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the corrected result: %d %s", resp.StatusCode, readAll(t, resp))
	}
	postResult(t, clean, again)
	if a, b := ratingsOf(t, h), ratingsOf(t, clean); a != b {
		t.Fatalf("after the corrected result:\n%s\nthe other server:\n%s", a, b)
	}
}

func TestDeleteResultRefusesUnknownAndInvalidIDs(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	postResult(t, h, resultBody("m1", 0))
	for _, tt := range []struct {
		path   string
		status int
		field  string
	}{
		{"/v1/results/no-such-match", http.StatusNotFound, ""},
		{"/v1/results/a%20%20b", http.StatusBadRequest, "match_id"},       // two spaces in a row
		{"/v1/results/a%20b", http.StatusNotFound, ""},                    // one is an id's
		{"/v1/results/alice%E2%80%8B", http.StatusBadRequest, "match_id"}, // a zero-width space
		{"/v1/results/" + strings.Repeat("x", ratings.MaxIDLen+1), http.StatusBadRequest, "match_id"},
	} {
		resp := exchange(t, h, http.MethodDelete, tt.path, "", "")
		p := readProblem(t, resp)
		if resp.StatusCode != tt.status || (tt.field != "" && !hasField(p, tt.field)) {
			t.Errorf("%s: %d %+v, want %d naming %q", tt.path, resp.StatusCode, p.Errors, tt.status, tt.field)
		}
	}
	if resp := exchange(t, h, http.MethodDelete, "/v1/results/m1", "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if resp := exchange(t, h, http.MethodDelete, "/v1/results/m1", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("deleted twice: %d, want 404", resp.StatusCode)
	}
	text := readAll(t, exchange(t, h, http.MethodGet, "/metrics", "", ""))
	if !strings.Contains(text, "matchmaker_results_deleted_total 1\n") {
		t.Errorf("metrics lack matchmaker_results_deleted_total 1")
	}
}

// Only an admin key corrects history: a results key, which posts results, cannot delete them.
func TestDeleteResultNeedsTheAdminScope(t *testing.T) {
	t.Parallel()
	keys, err := ParseAPIKeys("server:results:" + HashKey("r-key") + ",ops:admin:" + HashKey("a-key"))
	if err != nil {
		t.Fatal(err)
	}
	h := NewServer(Deps{Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()), Auth: &Auth{Keys: keys}})
	if resp := postResult(t, h, resultBody("m1", 0), "Authorization", "Bearer r-key"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("post: %d", resp.StatusCode)
	}
	for _, tt := range []struct {
		key  string
		want int
	}{{"", http.StatusUnauthorized}, {"r-key", http.StatusForbidden}, {"a-key", http.StatusOK}} {
		var headers []string
		if tt.key != "" {
			headers = []string{"Authorization", "Bearer " + tt.key}
		}
		if resp := exchange(t, h, http.MethodDelete, "/v1/results/m1", "", "", headers...); resp.StatusCode != tt.want {
			t.Errorf("key %q: %d, want %d", tt.key, resp.StatusCode, tt.want)
		}
	}
}

// An id with spaces between words is one id on every route: in a body, a path and a query.
func TestIDsWithSpacesOverHTTP(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	if resp := postResult(t, h, resultBody("Boring John's match", 0, "Boring John", "Silly Billy", "carol", "dave")); resp.StatusCode != http.StatusCreated {
		t.Fatalf("post: %d %s", resp.StatusCode, readAll(t, resp))
	}
	var byPath playerRatingsResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/players/Boring%20John/ratings", "", ""), &byPath)
	if byPath.ID != "Boring John" || len(byPath.Ratings) != 1 || byPath.Ratings[0].Games != 1 {
		t.Fatalf("by path: %+v", byPath)
	}
	body := readAll(t, exchange(t, h, http.MethodGet, "/v1/ratings?game_type=ctf&ids=Boring%20John,Boring", "", ""))
	if !strings.Contains(body, `"id":"Boring John","known":true`) || !strings.Contains(body, `"id":"Boring","known":false`) {
		t.Fatalf("by query: %s", body)
	}
	if resp := exchange(t, h, http.MethodDelete, "/v1/results/Boring%20John's%20match", "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d %s", resp.StatusCode, readAll(t, resp))
	}
}
