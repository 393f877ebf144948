package handlers

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

const roleQueue = `{"context":{"game_type":"ctf"},"team_size":2,"tick_ms":50,
 "expansions":{"interval":[{"after_s":0,"value":1000}]},
 "roles":["tank","dps"],"composition":{"tank":{"min":1,"max":1}}}`

const monsterQueue = `{"context":{"game_type":"ctf"},"tick_ms":50,
 "expansions":{"interval":[{"after_s":0,"value":1000}]},
 "team_defs":[{"name":"monster","size":1},{"name":"hunters","size":3}]}`

// Team shapes over HTTP: a definition reads back as written, bad shapes are 400s naming
// the field and store nothing, a role queue gives each player a role his team's
// composition allows, and a named asymmetric queue names its teams in the assignment and
// the match. Every answer is checked against the spec.
func TestTeamShapesOverHTTP(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	for _, tt := range []struct{ body, field string }{
		{`{"context":{"game_type":"ctf"},"teams":65,"team_size":1}`, "teams"},
		{`{"context":{"game_type":"ctf"},"team_size":2,"roles":["tank"],"composition":{"tank":{"min":3,"max":3}}}`, "composition.tank"},
		{`{"context":{"game_type":"ctf"},"team_size":2,"roles":["tank","dps"],"composition":{"tank":{"min":2,"max":2},"dps":{"min":1,"max":1}}}`, "composition"},
		{`{"context":{"game_type":"ctf"},"team_size":2,"composition":{"tank":{"min":1,"max":1}}}`, "composition"},
		{`{"context":{"game_type":"ctf"},"team_size":2,"roles":["tank"],"composition":{"mage":{"min":1,"max":1}}}`, "composition.mage"},
		{`{"context":{"game_type":"ctf"},"team_size":5,"min_team_size":[{"after_s":0,"value":4},{"after_s":60,"value":5}]}`, "min_team_size[1].value"},
		{`{"context":{"game_type":"ctf"},"team_defs":[{"name":"a","size":1},{"name":"a","size":2}]}`, "team_defs[1].name"},
		{`{"context":{"game_type":"ctf"},"team_defs":[{"size":1},{"size":2}],"teams":3}`, "teams"},
		{`{"context":{"game_type":"ctf"},"team_defs":[{"size":1},{"size":2}],"max_party_size":3}`, "max_party_size"},
		{`{"context":{"game_type":"ctf"},"teams":3,"team_size":2,"strategy":"greedy_pairs"}`, "strategy"},
		{`{"context":{"game_type":"ctf"},"rules":[{"name":"p","type":"party_mix","max_difference":-1}]}`, "rules[0].max_difference"},
	} {
		resp := exchange(t, h, http.MethodPut, "/v1/queues/bad", "application/json", tt.body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, tt.field) {
			t.Errorf("%s: %d %+v, want a 400 naming %s", tt.body, resp.StatusCode, p.Errors, tt.field)
		}
	}
	if resp := exchange(t, h, http.MethodGet, "/v1/queues/bad", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an invalid queue was stored: %d", resp.StatusCode)
	}

	put := func(name, body string) queueJSON {
		resp := exchange(t, h, http.MethodPut, "/v1/queues/"+name, "application/json", body)
		var q queueJSON
		if decodeJSON(t, resp, &q); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", name, resp.StatusCode)
		}
		return q
	}
	create := func(queue, body string) ticketJSON {
		resp := exchange(t, h, http.MethodPost, "/v1/queues/"+queue+"/tickets", "application/json", body)
		var tk ticketJSON
		if decodeJSON(t, resp, &tk); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", body, resp.StatusCode)
		}
		return tk
	}
	matched := func(id string) ticketJSON {
		var got ticketJSON
		decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+id+"?wait_s=10", "", ""), &got)
		if got.Status != "matched" || got.Assignment == nil {
			t.Fatalf("ticket %s: %+v", id, got)
		}
		return got
	}

	q := put("roles", roleQueue)
	if len(q.Roles) != 2 || q.Composition["tank"].Max != 1 {
		t.Fatalf("definition: %+v", q)
	}
	for _, tt := range []struct{ body, field string }{
		{`{"players":[{"id":"x","roles":["mage"]}]}`, "players[0].roles[0]"},
		{`{"players":[{"id":"x","roles":["tank","tank"]}]}`, "players[0].roles[1]"},
		{`{"players":[{"id":"x","roles":["tank"]},{"id":"y","roles":["tank"]}]}`, "players"},
	} {
		resp := exchange(t, h, http.MethodPost, "/v1/queues/roles/tickets", "application/json", tt.body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, tt.field) {
			t.Errorf("%s: %d %+v, want a 400 naming %s", tt.body, resp.StatusCode, p.Errors, tt.field)
		}
	}
	resp := exchange(t, h, http.MethodPost, "/v1/queues/roles/backfill", "application/json",
		`{"match_id":"m","teams":[{"players":[{"id":"x"}]},{"players":[]}],"open_slots":[0,1]}`)
	if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, "teams") {
		t.Errorf("a backfill in a shaped queue: %d %+v, want a 400 naming teams", resp.StatusCode, p.Errors)
	}
	// Three players who play only dps and one tank cannot make two teams of a tank and a
	// dps; a second tank can.
	var ids []string
	for i, roles := range []string{`["dps"]`, `["dps"]`, `["tank"]`, `["dps"]`} {
		ids = append(ids, create("roles", fmt.Sprintf(`{"players":[{"id":"p%d","roles":%s}]}`, i, roles)).ID)
	}
	ids = append(ids, create("roles", `{"players":[{"id":"p4","roles":["tank","dps"]}]}`).ID)
	got := matched(ids[0])
	tanks := 0
	for _, team := range got.Assignment.Teams {
		if len(team.Players) != 2 || len(team.Roles) != 2 {
			t.Fatalf("team %+v: want two players with roles", team)
		}
		for _, r := range team.Roles {
			if r == "tank" {
				tanks++
			}
		}
	}
	if tanks != 2 {
		t.Fatalf("teams %+v: want one tank each", got.Assignment.Teams)
	}
	var m matchOutJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/matches/"+got.Assignment.MatchID, "", ""), &m)
	if len(m.Teams) != 2 || len(m.Teams[0].Roles) != 2 {
		t.Fatalf("match: %+v", m)
	}

	q = put("monster", monsterQueue)
	if q.Teams != 2 || q.TeamSize != 3 || q.MaxPartySize != 3 || len(q.TeamDefs) != 2 {
		t.Fatalf("definition: %+v", q)
	}
	hunters := create("monster", `{"players":[{"id":"h1"},{"id":"h2"},{"id":"h3"}]}`)
	create("monster", `{"players":[{"id":"m1"}]}`)
	got = matched(hunters.ID)
	if a := got.Assignment; a.Teams[0].Name != "monster" || a.Teams[1].Name != "hunters" || a.Team != 1 ||
		len(a.Teams[0].Players) != 1 || len(a.Teams[1].Players) != 3 {
		t.Fatalf("assignment: %+v", a)
	}
}

// A queue's max_searching caps its searching tickets: past it a creation is a 429 naming
// the cap, with a Retry-After; the definition reads back with it.
func TestMaxSearchingCapsAQueue(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	resp := exchange(t, h, http.MethodPut, "/v1/queues/small", "application/json",
		`{"context":{"game_type":"ctf"},"team_size":5,"tick_ms":50,"max_searching":2}`)
	var q queueJSON
	if decodeJSON(t, resp, &q); resp.StatusCode != http.StatusCreated || q.MaxSearching != 2 {
		t.Fatalf("create: %d %+v", resp.StatusCode, q)
	}
	if resp := exchange(t, h, http.MethodPut, "/v1/queues/bad", "application/json",
		`{"context":{"game_type":"ctf"},"max_searching":-1}`); !hasField(readProblem(t, resp), "max_searching") {
		t.Fatalf("a negative cap: %d", resp.StatusCode)
	}
	for _, p := range []string{"a", "b"} {
		if resp := exchange(t, h, http.MethodPost, "/v1/queues/small/tickets", "application/json",
			`{"players":[{"id":"`+p+`"}]}`); resp.StatusCode != http.StatusCreated {
			t.Fatalf("ticket %s: %d", p, resp.StatusCode)
		}
	}
	// The leader counts the two searching tickets in its next snapshot; then the queue is full.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := exchange(t, h, http.MethodPost, "/v1/queues/small/tickets", "application/json", `{"players":[{"id":"c"}]}`)
		if resp.StatusCode == http.StatusTooManyRequests {
			if p := readProblem(t, resp); !hasField(p, "max_searching") || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("429 %+v, Retry-After %q", p.Errors, resp.Header.Get("Retry-After"))
			}
			return
		}
		if resp.StatusCode == http.StatusCreated { // before the snapshot: the cap is soft
			var tk ticketJSON
			decodeJSON(t, resp, &tk)
			exchange(t, h, http.MethodDelete, "/v1/tickets/"+tk.ID, "", "")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the third ticket was never refused: %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
