package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A result of a queue match names the match's players on their teams, in the queue's
// context: a results key cannot move ratings through a queue match with players who did not
// play it. A match the queue did not make takes any roster.
func TestResultsOfQueueMatchesNameTheirRoster(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	a := duelOfAliceAndBob(t, h)
	result := func(matchID, gameType, red, blue string) string {
		return fmt.Sprintf(`{"match_id":%q,"context":{"game_type":%q},"map":"m","duration_s":600,"winner":0,`+
			`"teams":[{"side":"red","players":[{"id":%q}]},{"side":"blue","players":[{"id":%q}]}]}`, matchID, gameType, red, blue)
	}
	red, blue := a.Teams[0].Players[0], a.Teams[1].Players[0]
	for _, tt := range []struct{ body, field string }{
		{result(a.MatchID, "ctf", red, "mallory"), "teams[1].players[0].id"},
		{result(a.MatchID, "ctf", blue, red), "teams[0].players[0].id"},
		{result(a.MatchID, "dm", red, blue), "context.game_type"},
	} {
		resp := exchange(t, h, http.MethodPost, "/v1/results", "application/json", tt.body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, tt.field) {
			t.Errorf("%s: %d %+v, want a 400 naming %s", tt.body, resp.StatusCode, p.Errors, tt.field)
		}
	}
	if resp := exchange(t, h, http.MethodPost, "/v1/results", "application/json", result(a.MatchID, "ctf", red, blue)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("the match's own roster: %d %s", resp.StatusCode, readAll(t, resp))
	}
	// Deleted by an admin, the match's result may be posted again: with its roster still.
	if resp := exchange(t, h, http.MethodDelete, "/v1/results/"+a.MatchID, "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d %s", resp.StatusCode, readAll(t, resp))
	}
	resp := exchange(t, h, http.MethodPost, "/v1/results", "application/json", result(a.MatchID, "ctf", red, "mallory"))
	if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, "teams[1].players[0].id") {
		t.Errorf("after the deletion, another roster: %d %+v, want a 400", resp.StatusCode, p.Errors)
	}
	if resp := exchange(t, h, http.MethodPost, "/v1/results", "application/json",
		strings.Replace(result(a.MatchID, "ctf", red, blue), `"winner":0`, `"winner":1`, 1)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("the corrected result: %d %s", resp.StatusCode, readAll(t, resp))
	}
	if resp := exchange(t, h, http.MethodPost, "/v1/results", "application/json", result("scrim-7", "ctf", "x", "y")); resp.StatusCode != http.StatusCreated {
		t.Fatalf("a match the queue did not make: %d %s", resp.StatusCode, readAll(t, resp))
	}
}

// duelOfAliceAndBob defines the duel queue on h, queues alice and bob in it, and returns
// alice's assignment once their match is made.
func duelOfAliceAndBob(t *testing.T, h http.Handler) *ticketAssignedJSON {
	t.Helper()
	exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json", duelQueue)
	var ids []string
	for _, p := range []string{"alice", "bob"} {
		var tk ticketJSON
		decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json",
			`{"players":[{"id":"`+p+`","rating":1000}]}`), &tk)
		ids = append(ids, tk.ID)
	}
	var got ticketJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+ids[0]+"?wait_s=10", "", ""), &got)
	if got.Assignment == nil {
		t.Fatalf("alice: %+v", got)
	}
	return got.Assignment
}
