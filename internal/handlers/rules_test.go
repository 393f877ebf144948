package handlers

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

const rankedQueue = `{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,
 "attributes":{"mode":{"type":"string","default":"casual"},"maps":{"type":"string_list","max_items":3},"level":{"type":"number"}},
 "rules":[{"name":"mode","type":"equal","attribute":"mode"},
          {"name":"maps","type":"intersect","attribute":"maps","min_common":1},
          {"name":"level","type":"distance","attribute":"level","expansions":[{"after_s":0,"value":5}],"optional_after_s":60},
          {"name":"fair","type":"team_balance","expansions":[{"after_s":0,"value":200}]},
          {"name":"spread","type":"distance","attribute":"rating","expansions":[{"after_s":0,"value":300}]}]}`

// A queue with attributes and rules: its definition reads back as written, bad attributes
// and rules are 400s naming the field, tickets carry their attributes, a match reports the
// values its rules agreed on (in the match and the assignment), and a ticket left alone
// says which rule keeps it waiting. Every answer is checked against the spec.
func TestQueueRulesOverHTTP(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	if resp := exchange(t, h, http.MethodPut, "/v1/queues/ranked", "application/json", rankedQueue); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, readAll(t, resp))
	}
	var q queueJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/queues/ranked", "", ""), &q)
	if len(q.Rules) != 5 || q.Rules[1].MinCommon != 1 || q.Attributes["mode"].Default.Str != "casual" ||
		q.Attributes["maps"].MaxItems != 3 || *q.Rules[2].OptionalAfterS != 60 {
		t.Fatalf("definition: %+v", q)
	}

	for _, tt := range []struct {
		method, path, body string
		field              string
	}{
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"attributes":{"m":{"type":"text"}}}`, "attributes.m.type"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"rules":[{"name":"m","type":"equal","attribute":"m"}]}`, "rules[0].attribute"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"rules":[{"name":"f","type":"fair"}]}`, "rules[0].type"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"rules":[{"name":"f","type":"team_balance","expansions":[{"after_s":0,"value":9},{"after_s":0,"value":9}]}]}`, "rules[0].expansions[1].after_s"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"rules":[{"name":"f","type":"team_balance","expansions":[{"after_s":0,"value":9}]},{"name":"f","type":"team_balance","expansions":[{"after_s":0,"value":9}]}]}`, "rules[1].name"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"attributes":{"m":{"type":"string","default":true}}}`, "attributes.m.default"},
		{"POST", "/v1/queues/ranked/tickets", `{"players":[{"id":"a"}],"attributes":{"maps":["dust","nuke","inferno","mirage"],"level":3}}`, "attributes.maps"},
		{"POST", "/v1/queues/ranked/tickets", `{"players":[{"id":"a"}],"attributes":{"maps":"dust","level":3}}`, "attributes.maps"},
		{"POST", "/v1/queues/ranked/tickets", `{"players":[{"id":"a"}],"attributes":{"maps":["dust"],"level":3,"crossplay":"on"}}`, "attributes.crossplay"},
		{"POST", "/v1/queues/ranked/tickets", `{"players":[{"id":"a"}],"attributes":{"maps":["dust",3],"level":3}}`, "attributes.maps"},
		{"POST", "/v1/queues/ranked/tickets", `{"players":[{"id":"a"}],"attributes":{"maps":["dust"]}}`, "attributes.level"},
		{"POST", "/v1/queues/ranked/backfill", `{"match_id":"m","teams":[{"players":[{"id":"x"}]},{"players":[]}],"open_slots":[0,1],"attributes":{"mode":3}}`, "attributes.mode"},
	} {
		resp := exchange(t, h, tt.method, tt.path, "application/json", tt.body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, tt.field) {
			t.Errorf("%s %s: %d %+v, want a 400 naming %s", tt.method, tt.body, resp.StatusCode, p.Errors, tt.field)
		}
	}
	if resp := exchange(t, h, http.MethodGet, "/v1/queues/q", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an invalid queue was stored: %d", resp.StatusCode)
	}

	create := func(body string) ticketJSON {
		resp := exchange(t, h, http.MethodPost, "/v1/queues/ranked/tickets", "application/json", body)
		var tk ticketJSON
		if decodeJSON(t, resp, &tk); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", body, resp.StatusCode)
		}
		return tk
	}
	alice := create(`{"players":[{"id":"alice"}],"attributes":{"mode":"ranked","maps":["nuke","dust"],"level":30}}`)
	if !slices.Equal(alice.Attributes["maps"].List, []string{"nuke", "dust"}) || alice.Attributes["level"].Num != 30 {
		t.Fatalf("attributes as created: %+v", alice.Attributes)
	}
	carol := create(`{"players":[{"id":"carol"}],"attributes":{"maps":["dust"],"level":31}}`) // casual
	bob := create(`{"players":[{"id":"bob"}],"attributes":{"mode":"ranked","maps":["inferno","dust","nuke"],"level":33}}`)

	var got ticketJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+alice.ID+"?wait_s=10", "", ""), &got)
	if got.Status != "matched" || got.Assignment == nil || got.Assignment.Attributes["mode"].Str != "ranked" ||
		!slices.Equal(got.Assignment.Attributes["maps"].List, []string{"dust", "nuke"}) {
		t.Fatalf("alice: %+v", got)
	}
	var m matchOutJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/matches/"+got.Assignment.MatchID, "", ""), &m)
	if !slices.Equal(m.Tickets, []string{alice.ID, bob.ID}) || !slices.Equal(m.Attributes["maps"].List, []string{"dust", "nuke"}) {
		t.Fatalf("match: %+v", m)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+carol.ID, "", ""), &got)
		if got.WaitingOn != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("carol does not say why she waits: %+v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got.Status != "searching" || got.WaitingOn.Rule != "interval" || got.WaitingOn.Detail == "" {
		t.Fatalf("carol waits on %+v", got.WaitingOn)
	}

	// A backfill's attributes are optional, each; a casual carol does not join a ranked match.
	resp := exchange(t, h, http.MethodPost, "/v1/queues/ranked/backfill", "application/json",
		`{"match_id":"m","teams":[{"players":[{"id":"x"}]},{"players":[]}],"open_slots":[0,1],"attributes":{"mode":"ranked"}}`)
	var bf ticketJSON
	if decodeJSON(t, resp, &bf); resp.StatusCode != http.StatusCreated || bf.Attributes["mode"].Str != "ranked" {
		t.Fatalf("backfill: %d %+v", resp.StatusCode, bf)
	}
	time.Sleep(150 * time.Millisecond) // a few ticks
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+carol.ID, "", ""), &got)
	if got.Status != "searching" {
		t.Fatalf("carol joined a ranked match: %+v", got)
	}
}
