package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// fuzzQueueServer is a server over the memory queue store (no tick loop) whose rating store
// fails like Postgres on text it cannot hold, with the queue "duo": 2v2, parties of two,
// regions eu and us.
func fuzzQueueServer(f *testing.F) http.Handler {
	rs := ratings.NewService(postgresLikeStore{ratings.NewMemoryStore(nil)}, ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs})
	h := NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Off: true}})
	if resp := exchange(f, h, http.MethodPut, "/v1/queues/duo", "application/json",
		`{"context":{"game_type":"ctf"},"team_size":2,"max_party_size":2,"regions":["eu","us"]}`); resp.StatusCode != http.StatusCreated {
		f.Fatalf("put queue: %d", resp.StatusCode)
	}
	return h
}

// checkRefusal fails the test unless a refusal names what was wrong: every 4xx but a 404 or
// 405 (the router's, or a queue or ticket that is not there) carries at least one error with
// a field. exchange has already checked it is problem+json that validates against the spec.
func checkRefusal(t *testing.T, resp *http.Response, what string) {
	t.Helper()
	if resp.StatusCode >= 500 {
		t.Fatalf("%s: %d", what, resp.StatusCode)
	}
	if resp.StatusCode < 400 || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		return
	}
	p := readProblem(t, resp)
	if len(p.Errors) == 0 {
		t.Fatalf("%s: %d without a field: %+v", what, resp.StatusCode, p)
	}
	for _, e := range p.Errors {
		if e.Field == "" || e.Message == "" {
			t.Fatalf("%s: %d with an error that names no field: %+v", what, resp.StatusCode, p)
		}
	}
}

// FuzzCreateTicket feeds POST /v1/queues/{name}/tickets arbitrary bodies and Idempotency-Keys:
// a 201 or 200 (a replay) whose ticket can be read back, or a 4xx problem+json naming the
// field, never a 5xx or a panic.
func FuzzCreateTicket(f *testing.F) {
	for _, seed := range []struct{ body, key string }{
		{`{"players":[{"id":"alice"}]}`, ""},
		{`{"players":[{"id":"alice","rating":1200},{"id":"bob"}],"latencies_ms":{"eu":20,"us":90},"ttl_s":60}`, "k-1"},
		{`{"players":[{"id":"a"},{"id":"a"}]}`, ""},
		{`{"players":[{"id":"a","rating":"x"}],"ttl_s":0}`, ""},
		{`{"players":[{"id":"a","rating":1e309}],"latencies_ms":{"mars":-1}}`, "k 2"},
		{`{"players":[{"id":"a","ratin":1}]}`, ""},
		{`{"players":null,"latencies_ms":null,"ttl_s":null}`, ""},
		{`{"players":[{"id":"a"}],"ttl_s":1.5}`, "\x00"},
		{`{"players":[{"id":"a"}]`, ""},
		{`[]`, ""},
	} {
		f.Add(seed.body, seed.key)
	}
	h := fuzzQueueServer(f)
	f.Fuzz(func(t *testing.T, body, key string) {
		var headers []string
		if key != "" {
			if strings.ContainsAny(key, "\r\n") {
				return // not a header a client can send
			}
			headers = []string{"Idempotency-Key", key}
		}
		resp := exchange(t, h, http.MethodPost, "/v1/queues/duo/tickets", "application/json", body, headers...)
		what := "POST " + body + " key " + key
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			checkRefusal(t, resp, what)
			return
		}
		var tk ticketJSON
		if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil || tk.ID == "" || tk.Status != "searching" && resp.StatusCode == http.StatusCreated {
			t.Fatalf("%s: %d %+v %v", what, resp.StatusCode, tk, err)
		}
		if got := exchange(t, h, http.MethodGet, "/v1/tickets/"+url.PathEscape(tk.ID), "", ""); got.StatusCode != http.StatusOK {
			t.Fatalf("%s: the ticket %s answered %d when read back", what, tk.ID, got.StatusCode)
		}
		// Cancel it, so that its players may appear in later inputs.
		if got := exchange(t, h, http.MethodDelete, "/v1/tickets/"+url.PathEscape(tk.ID), "", ""); got.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: cancelling %s answered %d", what, tk.ID, got.StatusCode)
		}
	})
}

// FuzzPutQueue feeds PUT /v1/queues/{name} arbitrary names and bodies: a 201 or 200 whose
// queue can be read back, or a 4xx problem+json naming the field, never a 5xx or a panic.
func FuzzPutQueue(f *testing.F) {
	for _, seed := range []struct{ name, body string }{
		{"duel", `{"context":{"game_type":"ctf"}}`},
		{"arena", `{"context":{"game_type":"ctf","mutators":["instagib"]},"team_size":5,"teams":2,"strategy":"greedy_pairs",
			"expansions":{"interval":[{"after_s":0,"value":25},{"after_s":10,"value":50}],"max_latency_ms":[{"after_s":0,"value":60}]},
			"regions":["eu","us"],"ticket_ttl_s":300,"max_party_size":5,"tick_ms":1000,"webhook":{"url":"https://example.com/h","secret":"0123456789abcdef"}}`},
		{"q", `{"context":{"game_type":"ctf"},"team_size":17,"teams":3,"strategy":"random"}`},
		{"q", `{"context":{"game_type":"ctf"},"expansions":{"interval":[{"after_s":5,"value":-1}]}}`},
		{"q", `{"context":{"game_type":"ctf"},"expansions":{"interval":[{"after_s":0,"value":1e400}]}}`},
		{"q", `{"context":{"game_type":"ctf"},"webhook":{"url":"ftp://x","secret":"short"},"tick_ms":1}`},
		{"q", `{"context":{"game_type":"ctf"},"regions":["eu","eu",""],"ticket_ttl_s":0}`},
		{"bad name", `{"context":{"game_type":"ctf"}}`},
		{"q", `{"context":{}}`},
		{"q", `{"tem_size":2}`},
		{"mmf", `{"context":{"game_type":"ctf"},"match_function":{"url":"https://mmf.example.com/match","secret":"0123456789abcdef","timeout_ms":500,"mode":"shadow","on_failure":"rules","max_pool":100}}`},
		{"q", `{"context":{"game_type":"ctf"},"match_function":{"url":"http://127.0.0.1/m","secret":"","timeout_ms":-1,"mode":"ab","max_pool":1e9}}`},
		{"q", `{"context":{"game_type":"ctf"},"match_function":{"url":"https://mmf.example.com/match"}}`},
		{"pen", `{"context":{"game_type":"ctf"},"acceptance":{"timeout_s":20},"penalties":{"dodge":{"window_s":86400,"steps":[{"count":2,"cooldown_s":60},{"count":3,"cooldown_s":600}]},
			"low_priority":{"leaves":2,"window_s":604800,"games":3,"extra_wait_s":120}}}`},
		{"q", `{"context":{"game_type":"ctf"},"penalties":{"dodge":{"window_s":9223372036854775807,"steps":[{"count":3,"cooldown_s":-9223372036854775808},{"count":2,"cooldown_s":604801}]}}}`},
		{"q", `{"context":{"game_type":"ctf"},"penalties":{"low_priority":{"leaves":0,"window_s":1.5,"games":-1,"extra_wait_s":86401},"dodge":null}}`},
	} {
		f.Add(seed.name, seed.body)
	}
	h := fuzzQueueServer(f)
	f.Fuzz(func(t *testing.T, name, body string) {
		path := "/v1/queues/" + url.PathEscape(name)
		if name == "" || name == "." || name == ".." {
			return // not a path the router sees as given
		}
		resp := exchange(t, h, http.MethodPut, path, "application/json", body)
		what := "PUT " + path + " " + body
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			checkRefusal(t, resp, what)
			return
		}
		var q queueJSON
		if err := json.NewDecoder(resp.Body).Decode(&q); err != nil || q.Name != name {
			t.Fatalf("%s: %d %+v %v", what, resp.StatusCode, q, err)
		}
		if got := exchange(t, h, http.MethodGet, path, "", ""); got.StatusCode != http.StatusOK {
			t.Fatalf("%s: the queue answered %d when read back", what, got.StatusCode)
		}
		if name != "duo" { // keep the store small; duo's tickets fuzz on
			if got := exchange(t, h, http.MethodDelete, path, "", ""); got.StatusCode != http.StatusNoContent {
				t.Fatalf("%s: deleting it answered %d", what, got.StatusCode)
			}
		}
	})
}
