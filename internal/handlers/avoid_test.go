package handlers

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// Avoid lists over HTTP: a queue's avoid reads back as written; bad definitions and bad
// lists are 400s naming the field, storing nothing; a player avoided waits on "avoid"
// (waiting_on) and is matched with another; his ticket reads back with its list. Every
// answer is checked against the spec.
func TestAvoidListsOverHTTP(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	const duel = `"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,"expansions":{"interval":[{"after_s":0,"value":1000}]}`
	for _, tt := range []struct{ body, field string }{
		{`{` + duel + `,"avoid":{"scope":"lobby"}}`, "avoid.scope"},
		{`{` + duel + `,"avoid":{"optional_after_s":0}}`, "avoid.optional_after_s"},
		{`{` + duel + `,"rules":[{"name":"avoid","type":"party_mix"}]}`, "rules[0].name"},
	} {
		resp := exchange(t, h, http.MethodPut, "/v1/queues/bad", "application/json", tt.body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, tt.field) {
			t.Errorf("%s: %d %+v, want a 400 naming %s", tt.body, resp.StatusCode, p.Errors, tt.field)
		}
	}
	if resp := exchange(t, h, http.MethodGet, "/v1/queues/bad", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an invalid queue was stored: %d", resp.StatusCode)
	}
	var q queueJSON
	resp := exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json", `{`+duel+`,"avoid":{"scope":"match","optional_after_s":3600}}`)
	if decodeJSON(t, resp, &q); resp.StatusCode != http.StatusCreated || q.Avoid == nil || q.Avoid.Scope != "match" ||
		q.Avoid.OptionalAfterS == nil || *q.Avoid.OptionalAfterS != 3600 {
		t.Fatalf("definition: %d %+v", resp.StatusCode, q.Avoid)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("p%d", i))
	}
	for _, tt := range []struct{ body, field string }{
		{`{"players":[{"id":"x","avoid":[` + strings.Join(many, ",") + `]}]}`, "players[0].avoid"},
		{`{"players":[{"id":"x","avoid":["y","x"]}]}`, "players[0].avoid[1]"},
		{`{"players":[{"id":"x"},{"id":"y","avoid":["x"]}]}`, "players[1].avoid[0]"},
		{`{"players":[{"id":"x","avoid":["y","y"]}]}`, "players[0].avoid[1]"},
		{`{"players":[{"id":"x","avoid":[""]}]}`, "players[0].avoid[0]"},
		{`{"players":[{"id":"x","avoid":["a\u200bb"]}]}`, "players[0].avoid[0]"},
	} {
		resp := exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", tt.body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, tt.field) {
			t.Errorf("%s: %d %+v, want a 400 naming %s", tt.body, resp.StatusCode, p.Errors, tt.field)
		}
	}
	create := func(body string) ticketJSON {
		var tk ticketJSON
		resp := exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", body)
		if decodeJSON(t, resp, &tk); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", body, resp.StatusCode)
		}
		return tk
	}
	al := create(`{"players":[{"id":"al","rating":1000,"avoid":["bo"]}]}`)
	if !slices.Equal(al.Players[0].Avoid, []string{"bo"}) {
		t.Fatalf("al's ticket: %+v", al.Players)
	}
	create(`{"players":[{"id":"bo","rating":1000}]}`)
	var got ticketJSON
	deadline := time.Now().Add(10 * time.Second)
	for {
		decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+al.ID, "", ""), &got)
		// A pass that ran before bo's ticket came has al waiting on the players count.
		if got.Status != "searching" || got.WaitingOn != nil && got.WaitingOn.Rule == "avoid" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("al does not say why he waits: %+v", got)
		}
		time.Sleep(20 * time.Millisecond) // the leader's next pass; it runs on the real clock here
	}
	if got.Status != "searching" || got.WaitingOn == nil || got.WaitingOn.Rule != "avoid" {
		t.Fatalf("al: %s, waiting on %+v, want avoid", got.Status, got.WaitingOn)
	}
	cy := create(`{"players":[{"id":"cy","rating":1400}]}`)
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+al.ID+"?wait_s=10", "", ""), &got)
	if got.Status != "matched" || got.Assignment == nil || !slices.ContainsFunc(got.Assignment.Teams, func(team assignedTeamJSON) bool {
		return slices.Contains(team.Players, "cy")
	}) {
		t.Fatalf("al: %+v, want matched with cy (%s)", got, cy.ID)
	}
}
