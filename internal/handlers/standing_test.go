package handlers

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// Penalties over HTTP: bad penalties are 400s naming the field, storing nothing; a player
// who declines twice gets a 429 naming him with retry_at and Retry-After; his standing
// reads back (GET) and is cleared (DELETE). Every answer is checked against the spec.
func TestPenaltiesOverHTTP(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	const duel = `"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,"acceptance":{"timeout_s":60}`
	const lp = `"low_priority":{"leaves":2,"window_s":604800,"games":3,"extra_wait_s":120}`
	for _, tt := range []struct{ body, field string }{
		{`{` + duel + `,"penalties":{"dodge":{"window_s":86400,"steps":[{"count":3,"cooldown_s":60},{"count":2,"cooldown_s":600}]}}}`,
			"penalties.dodge.steps[1].count"},
		{`{` + duel + `,"penalties":{"dodge":{"window_s":86400,"steps":[{"count":2,"cooldown_s":604801}]}}}`,
			"penalties.dodge.steps[0].cooldown_s"},
		{`{` + duel + `,"penalties":{"dodge":{"window_s":0,"steps":[{"count":2,"cooldown_s":60}]}}}`, "penalties.dodge.window_s"},
		{`{` + duel + `,"penalties":{"dodge":{"window_s":86400,"steps":[{"count":-1,"cooldown_s":60}]}}}`, "penalties.dodge.steps[0].count"},
		{`{` + duel + `,"penalties":{"low_priority":{"leaves":2,"window_s":604800,"games":0,"extra_wait_s":120}}}`, "penalties.low_priority.games"},
		{`{` + duel + `,"penalties":{"low_priority":{"leaves":2,"window_s":604800,"games":3,"extra_wait_s":-5}}}`, "penalties.low_priority.extra_wait_s"},
		{`{` + duel + `,"penalties":{"dodge":{"window_s":86400,"steps":[],"cooldown_s":60}}}`, "penalties.dodge.cooldown_s"},
		{`{` + duel + `,"rules":[{"name":"low_priority","type":"party_mix"}]}`, "rules[0].name"},
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
	resp := exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json",
		`{`+duel+`,"penalties":{"dodge":{"window_s":86400,"steps":[{"count":2,"cooldown_s":60},{"count":3,"cooldown_s":600}]},`+lp+`}}`)
	if decodeJSON(t, resp, &q); resp.StatusCode != http.StatusCreated || q.Penalties == nil || q.Penalties.Dodge == nil ||
		len(q.Penalties.Dodge.Steps) != 2 || q.Penalties.Dodge.Steps[1].CooldownS != 600 || q.Penalties.LowPriority == nil ||
		q.Penalties.LowPriority.ExtraWaitS != 120 {
		t.Fatalf("definition: %d %+v", resp.StatusCode, q.Penalties)
	}
	create := func(player string) *http.Response {
		return exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", `{"players":[{"id":"`+player+`","rating":1000}]}`)
	}
	if resp := create("bo"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("bo: %d", resp.StatusCode)
	}
	for range 2 {
		var al ticketJSON
		decodeJSON(t, create("al"), &al)
		deadline := time.Now().Add(10 * time.Second)
		for al.Proposal == nil {
			if time.Now().After(deadline) {
				t.Fatalf("al is not proposed: %+v", al)
			}
			time.Sleep(20 * time.Millisecond) // the leader's next pass, on the real clock here
			decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+al.ID, "", ""), &al)
		}
		resp := exchange(t, h, http.MethodPost, "/v1/matches/"+al.Proposal.MatchID+"/acceptance", "application/json",
			`{"player_id":"al","accept":false}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("al declines: %d", resp.StatusCode)
		}
	}
	resp = create("al")
	p := readProblem(t, resp)
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || !hasField(p, "players[0].id") || p.RetryAt == nil || retry < 55 || retry > 60 {
		t.Fatalf("al after two declines: %d %+v (Retry-After %q), want a 429 naming him with retry_at", resp.StatusCode, p,
			resp.Header.Get("Retry-After"))
	}
	var st standingResponse
	resp = exchange(t, h, http.MethodGet, "/v1/players/al/standing", "", "")
	if decodeJSON(t, resp, &st); resp.StatusCode != http.StatusOK || len(st.Contexts) != 1 || st.Contexts[0].Context != "ctf" ||
		len(st.Contexts[0].Dodges) != 2 || st.Contexts[0].CooldownUntil == nil || !st.Contexts[0].CooldownUntil.Equal(*p.RetryAt) {
		t.Fatalf("al's standing: %d %+v", resp.StatusCode, st)
	}
	if resp := exchange(t, h, http.MethodDelete, "/v1/players/al/standing", "", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("clear: %d", resp.StatusCode)
	}
	resp = exchange(t, h, http.MethodGet, "/v1/players/al/standing", "", "")
	if decodeJSON(t, resp, &st); resp.StatusCode != http.StatusOK || len(st.Contexts) != 0 {
		t.Fatalf("al's standing after the clearing: %d %+v", resp.StatusCode, st)
	}
	if resp := create("al"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("al after the clearing: %d", resp.StatusCode)
	}
	if resp := exchange(t, h, http.MethodGet, "/v1/players/a%E2%80%8Bb/standing", "", ""); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a bad id: %d", resp.StatusCode)
	}
}
