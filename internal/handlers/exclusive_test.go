package handlers

import (
	"net/http"
	"testing"
)

// TestExclusiveAcrossQueuesOverHTTP: a player searching in two queues and a spectator queue;
// matched in one, his ticket in the other is cancelled matched_elsewhere, his spectator
// ticket ("exclusive": false) searches on; a ticket he creates while that match is live is
// created cancelled matched_elsewhere (201, the answer validated against the spec);
// "exclusive" of the wrong type is a 400 naming it.
func TestExclusiveAcrossQueuesOverHTTP(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	const duel = `{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,"expansions":{"interval":[{"after_s":0,"value":1000}]}}`
	for _, name := range []string{"ranked", "casual", "watch"} {
		if resp := exchange(t, h, http.MethodPut, "/v1/queues/"+name, "application/json", duel); resp.StatusCode != http.StatusCreated {
			t.Fatalf("put %s: %d", name, resp.StatusCode)
		}
	}
	resp := exchange(t, h, http.MethodPost, "/v1/queues/ranked/tickets", "application/json", `{"players":[{"id":"al"}],"exclusive":"yes"}`)
	if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, "exclusive") {
		t.Fatalf("exclusive of the wrong type: %d %+v", resp.StatusCode, p.Errors)
	}
	create := func(queue, body string) ticketJSON {
		var tk ticketJSON
		resp := exchange(t, h, http.MethodPost, "/v1/queues/"+queue+"/tickets", "application/json", body)
		if decodeJSON(t, resp, &tk); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create in %s %s: %d", queue, body, resp.StatusCode)
		}
		return tk
	}
	watch := create("watch", `{"players":[{"id":"al","rating":1000}],"exclusive":false}`)
	casual := create("casual", `{"players":[{"id":"al","rating":1000}]}`)
	ranked := create("ranked", `{"players":[{"id":"al","rating":1000}]}`)
	if watch.Exclusive || !casual.Exclusive {
		t.Fatalf("exclusive: watch %v, casual %v", watch.Exclusive, casual.Exclusive)
	}
	create("ranked", `{"players":[{"id":"bo","rating":1000}]}`)
	var got ticketJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+ranked.ID+"?wait_s=10", "", ""), &got)
	if got.Status != "matched" {
		t.Fatalf("al's ranked ticket: %s", got.Status)
	}
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+casual.ID, "", ""), &got)
	if got.Status != "cancelled" || got.Reason != "matched_elsewhere" {
		t.Fatalf("al's casual ticket: %s %q, want cancelled matched_elsewhere", got.Status, got.Reason)
	}
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+watch.ID, "", ""), &got)
	if got.Status != "searching" {
		t.Fatalf("al's spectator ticket: %s", got.Status)
	}
	// Queued again while his ranked match is live: created, and cancelled at once.
	again := create("casual", `{"players":[{"id":"al","rating":1000}]}`)
	if again.Status != "cancelled" || again.Reason != "matched_elsewhere" {
		t.Fatalf("al's ticket created while his match is live: %s %q, want cancelled matched_elsewhere", again.Status, again.Reason)
	}
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+again.ID, "", ""), &got)
	if got.Status != "cancelled" || got.Reason != "matched_elsewhere" {
		t.Fatalf("that ticket read back: %s %q", got.Status, got.Reason)
	}
}
