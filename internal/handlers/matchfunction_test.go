package handlers

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A queue's match function over PUT and GET /v1/queues/{name}: the defaults, the secret never
// shown and kept on a read-modify-write, each fault a 400 naming its field.
func TestQueueMatchFunctionOverHTTP(t *testing.T) {
	t.Parallel()
	h := keyedQueueServer(t)
	const secret = "0123456789abcdef-mmf"
	q := `{"context":{"game_type":"ctf"},"team_size":1,"match_function":{"url":"http://127.0.0.1:9/match","secret":"` + secret + `"}}`
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/mmf", q); resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %d %s", resp.StatusCode, readAll(t, resp))
	}
	var got queueJSON
	decodeJSON(t, as(t, h, "key-ops", http.MethodGet, "/v1/queues/mmf", ""), &got)
	want := matchFunctionPublicJSON{URL: "http://127.0.0.1:9/match", TimeoutMS: 1000, Mode: "replace", OnFailure: "wait", MaxPool: 10_000}
	if got.MatchFn == nil || *got.MatchFn != want {
		t.Fatalf("the match function read back: %+v, want %+v", got.MatchFn, want)
	}
	body := readAll(t, as(t, h, "key-ops", http.MethodGet, "/v1/queues", ""))
	if strings.Contains(body, secret) {
		t.Fatalf("a listing shows the match function's secret: %s", body)
	}
	// Read, changed and put back without the secret: the stored one is kept for the same url.
	again := `{"context":{"game_type":"ctf"},"team_size":1,"match_function":{"url":"http://127.0.0.1:9/match","timeout_ms":250,"mode":"shadow","on_failure":"rules","max_pool":500}}`
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/mmf", again); resp.StatusCode != http.StatusOK {
		t.Fatalf("put back without the secret: %d %s", resp.StatusCode, readAll(t, resp))
	}
	decodeJSON(t, as(t, h, "key-ops", http.MethodGet, "/v1/queues/mmf", ""), &got)
	want = matchFunctionPublicJSON{URL: "http://127.0.0.1:9/match", TimeoutMS: 250, Mode: "shadow", OnFailure: "rules", MaxPool: 500}
	if got.MatchFn == nil || *got.MatchFn != want {
		t.Fatalf("the match function changed: %+v, want %+v", got.MatchFn, want)
	}
	fn := func(members string) string {
		return `{"context":{"game_type":"ctf"},"match_function":{` + members + `}}`
	}
	for _, tc := range []struct{ body, field string }{
		{fn(`"url":"http://127.0.0.1:8/other"`), "match_function.secret"}, // a new url needs its secret
		{fn(`"url":"ftp://x","secret":"0123456789abcdef"`), "match_function.url"},
		{fn(`"url":"http://10.0.0.7/match","secret":"0123456789abcdef"`), "match_function.url"}, // a private address
		{fn(`"url":"https://x.example","secret":"short"`), "match_function.secret"},
		{fn(`"url":"https://x.example","secret":"0123456789abcdef","timeout_ms":5`), "match_function.timeout_ms"},
		{fn(`"url":"https://x.example","secret":"0123456789abcdef","timeout_ms":30001`), "match_function.timeout_ms"},
		{fn(`"url":"https://x.example","secret":"0123456789abcdef","mode":"ab"`), "match_function.mode"},
		{fn(`"url":"https://x.example","secret":"0123456789abcdef","on_failure":"retry"`), "match_function.on_failure"},
		{fn(`"url":"https://x.example","secret":"0123456789abcdef","max_pool":0`), "match_function.max_pool"},
		{fn(`"url":"https://x.example","secret":"0123456789abcdef","max_pool":100001`), "match_function.max_pool"},
		{fn(`"url":"https://x.example","secret":"0123456789abcdef","pool":5`), "match_function.pool"},
	} {
		resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/mmf", tc.body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, tc.field) {
			t.Errorf("%s: %d %+v, want 400 naming %s", tc.body, resp.StatusCode, p, tc.field)
		}
	}
	// Nothing half-written: the faulty puts left the definition as it was.
	decodeJSON(t, as(t, h, "key-ops", http.MethodGet, "/v1/queues/mmf", ""), &got)
	if got.MatchFn == nil || *got.MatchFn != want {
		t.Fatalf("after refused puts: %+v, want %+v", got.MatchFn, want)
	}
}

// In mode shadow, /stats shows the rules' matches beside the function's over the last 10
// minutes (validated against the spec, as every response of these tests). A shadow call
// runs beside the ticks, one at a time, and a tick finding one running makes none: had the
// queue been shadowed from the start, a call with alice alone, slow on a loaded host, could
// still run at the tick that matched her with bob, and the function would never have seen
// the two (no function match after 10 s). So both wait first in mode replace, under a
// function that matches nothing (its calls inline in the ticks), until it has been sent
// both; then, in mode shadow, no call is running at the tick the rules match them, whose
// call has them.
func TestQueueStatsShowTheShadow(t *testing.T) {
	t.Parallel()
	sawBoth := make(chan struct{})
	var once sync.Once
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Pool []struct {
				ID string `json:"id"`
			} `json:"pool"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Pool) < 2 || r.URL.Path != "/shadow" {
			if len(req.Pool) >= 2 {
				once.Do(func() { close(sawBoth) })
			}
			_, _ = io.WriteString(w, `{"matches":[]}`)
			return
		}
		_, _ = io.WriteString(w, `{"matches":[{"teams":[{"tickets":["`+req.Pool[0].ID+`"]},{"tickets":["`+req.Pool[1].ID+`"]}]},`+
			`{"teams":[{"tickets":["tk-gone"]},{"tickets":["tk-too"]}]}]}`)
	}))
	defer fn.Close()
	h := keyedQueueServer(t)
	queueIn := func(mode string) string {
		return `{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,"match_function":{"url":"` + fn.URL + `/` + mode + `","secret":"0123456789abcdef","mode":"` + mode + `"}}`
	}
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/shadowed", queueIn("replace")); resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %d %s", resp.StatusCode, readAll(t, resp))
	}
	var a ticketJSON
	decodeJSON(t, as(t, h, "key-a", http.MethodPost, "/v1/queues/shadowed/tickets", `{"players":[{"id":"alice"}]}`), &a)
	decodeJSON(t, as(t, h, "key-a", http.MethodPost, "/v1/queues/shadowed/tickets", `{"players":[{"id":"bob"}]}`), new(ticketJSON))
	select {
	case <-sawBoth:
	case <-time.After(10 * time.Second):
		t.Fatal("in mode replace, the function was not sent alice and bob after 10 s")
	}
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/shadowed", queueIn("shadow")); resp.StatusCode != http.StatusOK {
		t.Fatalf("put queue in mode shadow: %d %s", resp.StatusCode, readAll(t, resp))
	}
	if m := waitStatus(t, h, "key-a", a.ID, queue.Matched); !strings.HasPrefix(m.Assignment.MatchID, "mt-tk-") {
		t.Fatalf("in shadow, matched by %s, not the rules", m.Assignment.MatchID)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st queueStatsJSON
		decodeJSON(t, as(t, h, "key-ops", http.MethodGet, "/v1/queues/shadowed/stats", ""), &st)
		if sh := st.Shadow; sh != nil && sh.Rules.Matches == 1 && sh.Function.Matches == 1 {
			if sh.WindowS != 600 || sh.Function.TicketsMatched != 2 || sh.Function.Rejected["unknown_ticket"] != 1 ||
				sh.Function.MeanAverageDifference == nil || sh.Rules.MedianWaitS == nil || sh.FunctionCalls < 1 || sh.FunctionFailures != 0 {
				t.Fatalf("shadow stats: %+v", sh)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no shadow stats after 10 s: %+v", st.Shadow)
		}
		time.Sleep(50 * time.Millisecond) // the leader's snapshot is rebuilt every second of the real clock
	}
}
