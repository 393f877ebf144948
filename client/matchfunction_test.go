package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

const functionSecret = "a-match-function-secret"

var functionEpoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// functionQueue is a queue whose pool shows every part of a ticket a function reads: roles
// and a composition, attributes of each type, latencies, and tolerances of the interval, the
// latency and a widening rule.
func functionQueue() queue.Queue {
	q := queue.DefaultQueue("ranked")
	q.TeamSize, q.MaxPartySize, q.Roles = 2, 2, []string{"tank", "dps"}
	q.Composition = map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}
	q.Regions = []string{"us", "eu"}
	q.Expansions.MaxLatencyMS = []queue.Step{{AfterS: 0, Value: 50}, {AfterS: 20, Value: 120}}
	q.Attributes = map[string]matchrules.Attribute{"clan": {Type: matchrules.TypeString}, "level": {Type: matchrules.TypeNumber},
		"maps": {Type: matchrules.TypeStringList}}
	q.Rules = []matchrules.Rule{{Name: "close", Kind: matchrules.RuleDistance, Attribute: "level",
		Expansions: []matchrules.Step{{AfterS: 0, Value: 2}, {AfterS: 15, Value: 5}}}}
	return q
}

// functionPool is four searching tickets, oldest first: a party of a tank and a dps, then
// three solo players.
func functionPool() []queue.Ticket {
	ticket := func(id string, wait int, roles ...string) queue.Ticket {
		t := queue.Ticket{ID: id, Queue: "ranked", Status: queue.Searching, CreatedAt: functionEpoch.Add(-time.Duration(wait) * time.Second),
			Attributes: map[string]matchrules.Value{"clan": matchrules.StringValue("wolves"), "level": matchrules.NumberValue(float64(wait % 7)),
				"maps": matchrules.ListValue("dust", "nuke")},
			Latencies: map[string]float64{"eu": 20 + float64(wait), "us": 95.5}}
		for i, r := range roles {
			p := queue.Player{ID: fmt.Sprintf("%s-%d", id, i+1), Rating: 1000 + float64(10*wait+i)}
			if r != "" {
				p.Roles = strings.Split(r, ",")
			}
			t.Players = append(t.Players, p)
		}
		return t
	}
	return []queue.Ticket{ticket("a", 40, "tank", "dps"), ticket("b", 30, "tank"), ticket("c", 12, "dps,tank"), ticket("d", 3, "")}
}

// signedCall is the request the leader sends: the body AppendFunctionRequest writes, signed
// with queue.Sign at signedAt.
func signedCall(t *testing.T, url string, r queue.FunctionRequest, signedAt time.Time) *http.Request {
	t.Helper()
	body := queue.AppendFunctionRequest(nil, r)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(queue.SignatureHeader, queue.Sign(functionSecret, signedAt.Unix(), r.Delivery(), body))
	req.Header.Set(queue.DeliveryHeader, r.Delivery())
	return req
}

// The service's own request, through the handler, reaches the function whole (re-encoded
// from the client's types it is the same JSON: no member lost or changed), with the call's
// time to its deadline on its context, from its arrival on this host's clock (not the
// leader's); the function's answer is what the service's strict reader reads, and the
// service's check makes its match.
func TestMatchFunctionHandlerRoundTripsTheServicesProtocol(t *testing.T) {
	t.Parallel()
	q, pool := functionQueue(), functionPool()
	call := queue.FunctionRequest{Queue: &q, Tick: 7, Now: functionEpoch, Deadline: functionEpoch.Add(time.Hour), Pool: pool}
	sent := queue.AppendFunctionRequest(nil, call)
	region := "eu"
	var attr client.AttributeValue
	if err := attr.FromAttributeStringList([]string{"dust"}); err != nil {
		t.Fatal(err)
	}
	answer := []client.ProposedMatch{{
		Teams:      []client.ProposedTeam{{Tickets: []string{"a"}}, {Tickets: []string{"b", "c"}}},
		Roles:      &map[string]string{"a-1": "tank", "a-2": "dps", "b-1": "tank", "c-1": "dps"},
		Attributes: &map[string]client.AttributeValue{"maps": attr},
		Region:     &region,
	}}
	var fnErr error
	h := &client.MatchFunctionServer{Secret: functionSecret, Now: func() time.Time { return functionEpoch }, Func: func(ctx context.Context, req *client.MatchFunctionRequest) ([]client.ProposedMatch, error) {
		again, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		fnErr = errors.Join(sameJSON("the request as the function reads it", again, sent),
			check(req.Queue == "ranked" && req.Tick == 7 && len(req.Pool) == 4, "queue %q tick %d pool %d", req.Queue, req.Tick, len(req.Pool)))
		// The request's hour (its deadline less its now), from now on this host's clock.
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Hour || time.Until(d) < time.Hour-time.Minute {
			fnErr = errors.Join(fnErr, fmt.Errorf("the function's context ends in %v (%v), want the request's hour", time.Until(d), ok))
		}
		clan, err := (*req.Pool[0].Attributes)["clan"].AsAttributeString()
		fnErr = errors.Join(fnErr, err, check(clan == "wolves", "ticket a's clan %q", clan),
			check(req.Pool[0].Tolerances.Interval == 150 && req.Pool[0].WaitS == 40, "ticket a's interval %v wait %v", req.Pool[0].Tolerances.Interval, req.Pool[0].WaitS))
		return answer, nil
	}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.DefaultClient.Do(signedCall(t, srv.URL, call, functionEpoch))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("answer %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if fnErr != nil {
		t.Fatal(fnErr)
	}
	got, err := queue.DecodeFunctionAnswer(body, len(pool))
	if err != nil {
		t.Fatalf("the service cannot read the handler's answer: %v\n%s", err, body)
	}
	want := []queue.ProposedMatch{{Teams: [][]string{{"a"}, {"b", "c"}}, Roles: map[string]string{"a-1": "tank", "a-2": "dps", "b-1": "tank", "c-1": "dps"},
		Attributes: map[string]matchrules.Value{"maps": matchrules.ListValue("dust")}, Region: "eu"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the service reads\n%+v\nwant\n%+v", got, want)
	}
	check := queue.FunctionCheck{Queue: &q, Pool: pool, Now: functionEpoch}
	made, rejected := check.Check(got)
	if len(made) != 1 || len(rejected) != 0 {
		t.Fatalf("the service's check made %d match(es), rejected %+v", len(made), rejected)
	}
}

// A function that proposes nothing answers an empty list, which the service reads (a
// missing one it would not).
func TestMatchFunctionHandlerAnswersAnEmptyList(t *testing.T) {
	t.Parallel()
	q := functionQueue()
	h := &client.MatchFunctionServer{Secret: functionSecret, Now: func() time.Time { return functionEpoch },
		Func: func(context.Context, *client.MatchFunctionRequest) ([]client.ProposedMatch, error) { return nil, nil }}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, signedCall(t, "/", queue.FunctionRequest{Queue: &q, Now: functionEpoch, Deadline: functionEpoch.Add(time.Second)}, functionEpoch))
	got, err := queue.DecodeFunctionAnswer(rec.Body.Bytes(), 0)
	if rec.Code != http.StatusOK || err != nil || len(got) != 0 {
		t.Fatalf("%d %s: %v %v", rec.Code, rec.Body, got, err)
	}
}

// What the handler refuses, before the function sees it, and a function's error: each a
// problem+json naming why, the function called only for a good request.
func TestMatchFunctionHandlerRefuses(t *testing.T) {
	t.Parallel()
	q, pool := functionQueue(), functionPool()
	call := queue.FunctionRequest{Queue: &q, Tick: 3, Now: functionEpoch, Deadline: functionEpoch.Add(time.Second), Pool: pool}
	signed := func(body string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set(queue.SignatureHeader, queue.Sign(functionSecret, functionEpoch.Unix(), "ranked:tick:3", []byte(body)))
		r.Header.Set(queue.DeliveryHeader, "ranked:tick:3")
		return r
	}
	otherSecret := signedCall(t, "/", call, functionEpoch)
	body, _ := io.ReadAll(otherSecret.Body)
	otherSecret.Body = io.NopCloser(bytes.NewReader(body))
	otherSecret.Header.Set(queue.SignatureHeader, queue.Sign("another-secret-of-16-bytes", functionEpoch.Unix(), call.Delivery(), body))
	otherDelivery := signedCall(t, "/", call, functionEpoch)
	otherDelivery.Header.Set(queue.DeliveryHeader, "ranked:tick:4")
	unsigned := signedCall(t, "/", call, functionEpoch)
	unsigned.Header.Del(queue.SignatureHeader)
	for _, tc := range []struct {
		name   string
		req    *http.Request
		fail   bool // the function errs
		status int
		detail string
	}{
		{"a GET", httptest.NewRequest(http.MethodGet, "/", nil), false, http.StatusMethodNotAllowed, "POST"},
		{"no signature", unsigned, false, http.StatusUnauthorized, "bad signature"},
		{"another secret", otherSecret, false, http.StatusUnauthorized, "does not match"},
		{"another delivery id", otherDelivery, false, http.StatusUnauthorized, "does not match"},
		{"signed an hour ago", signedCall(t, "/", call, functionEpoch.Add(-time.Hour)), false, http.StatusUnauthorized, "from now"},
		{"not JSON", signed(`{"queue": "ranked", "pool": [`), false, http.StatusBadRequest, "not a MatchFunctionRequest"},
		{"a pool of the wrong type", signed(`{"queue": "ranked", "teams": 2, "pool": {}}`), false, http.StatusBadRequest, "not a MatchFunctionRequest"},
		{"no queue", signed(`{"teams": 2, "pool": []}`), false, http.StatusBadRequest, `no "queue"`},
		{"no teams", signed(`{"queue": "ranked", "pool": []}`), false, http.StatusBadRequest, `no "teams"`},
		{"no pool", signed(`{"queue": "ranked", "teams": 2}`), false, http.StatusBadRequest, `no "pool"`},
		{"over the bound", signed(`{"queue": "ranked", "teams": 2, "pool": [` + strings.Repeat(`{"id": "x"},`, 400) + `{}]}`), false,
			http.StatusRequestEntityTooLarge, "over 4096 bytes"},
		{"the function's error", signedCall(t, "/", call, functionEpoch), true, http.StatusInternalServerError, "the match function failed: no model loaded"},
	} {
		called := false
		h := &client.MatchFunctionServer{Secret: functionSecret, MaxBody: 4096, Now: func() time.Time { return functionEpoch },
			Func: func(context.Context, *client.MatchFunctionRequest) ([]client.ProposedMatch, error) {
				called = true
				if tc.fail {
					return nil, errors.New("no model loaded")
				}
				return nil, nil
			}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, tc.req)
		var problem struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		}
		err := json.Unmarshal(rec.Body.Bytes(), &problem)
		if rec.Code != tc.status || err != nil || problem.Status != tc.status || !strings.Contains(problem.Detail, tc.detail) ||
			rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s %s, want %d with %q", tc.name, rec.Code, rec.Header().Get("Content-Type"), rec.Body, tc.status, tc.detail)
		}
		if called != tc.fail {
			t.Errorf("%s: the function called: %v", tc.name, called)
		}
	}
}

// sameJSON says how got and want differ as JSON values (member order and number forms
// aside).
func sameJSON(what string, got, want []byte) error {
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		return fmt.Errorf("%s:\n%s\nwant\n%s", what, got, want)
	}
	return nil
}

func check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// tsFixture is the TypeScript client's test of its match function handler
// (clients/typescript/test/matchfunction.test.ts): a call as the service makes it, and the
// answer its function must write, which the service reads and makes.
const tsFixture = "../clients/typescript/test/testdata/matchfunction.json"

// The fixture's call is what the service's encoder and signature make of the pool now, and
// its answer is one the service's strict reader reads and its check makes whole; run with
// UPDATE_FIXTURES=1 to write it after a change of the protocol.
func TestMatchFunctionTypeScriptFixture(t *testing.T) {
	t.Parallel()
	q, pool := functionQueue(), functionPool()
	call := queue.FunctionRequest{Queue: &q, Tick: 7, Now: functionEpoch, Deadline: functionEpoch.Add(time.Hour), Pool: pool}
	body := queue.AppendFunctionRequest(nil, call)
	answer := `{"matches":[{"teams":[{"tickets":["a"]},{"tickets":["b","c"]}],"roles":{"a-1":"tank","a-2":"dps","b-1":"tank","c-1":"dps"}}]}`
	fixture := map[string]any{
		"secret":    functionSecret,
		"signed_at": functionEpoch.Format(time.RFC3339),
		"headers": map[string]string{
			strings.ToLower(queue.SignatureHeader): queue.Sign(functionSecret, functionEpoch.Unix(), call.Delivery(), body),
			strings.ToLower(queue.DeliveryHeader):  call.Delivery(),
		},
		"body":   string(body),
		"answer": json.RawMessage(answer),
	}
	want, err := json.MarshalIndent(fixture, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if os.Getenv("UPDATE_FIXTURES") == "1" {
		if err := os.WriteFile(tsFixture, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(tsFixture)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not the service's call of now: run UPDATE_FIXTURES=1 go test ./client -run TypeScriptFixture", tsFixture)
	}
	matches, err := queue.DecodeFunctionAnswer([]byte(answer), len(pool))
	if err != nil {
		t.Fatalf("the service cannot read the fixture's answer: %v", err)
	}
	check := queue.FunctionCheck{Queue: &q, Pool: pool, Now: functionEpoch}
	if made, rejected := check.Check(matches); len(made) != 1 || len(rejected) != 0 {
		t.Fatalf("the service's check made %d match(es), rejected %+v", len(made), rejected)
	}
}

// Whatever body a signed call carries, the handler answers a 200 whose answer the service
// reads, or a 400 problem; it never panics, and the function sees only a request with a
// queue, teams and a pool.
func FuzzMatchFunctionRequest(f *testing.F) {
	q, pool := functionQueue(), functionPool()
	f.Add(queue.AppendFunctionRequest(nil, queue.FunctionRequest{Queue: &q, Tick: 1, Now: functionEpoch, Deadline: functionEpoch.Add(time.Second), Pool: pool}))
	f.Add([]byte(`{"queue": "q", "teams": 2, "pool": [{"id": "a", "players": [{"id": "p", "rating": 1}], "attributes": {"x": [1]}}]}`))
	f.Add([]byte(`{"queue": "q", "team_defs": [{"size": 1}], "pool": [], "deadline": "2026-12-01T12:00:00Z"}`))
	f.Add([]byte(`{"queue": "", "teams": -1, "pool": null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		h := &client.MatchFunctionServer{Secret: functionSecret, Now: func() time.Time { return functionEpoch },
			Func: func(_ context.Context, req *client.MatchFunctionRequest) ([]client.ProposedMatch, error) {
				if req.Queue == "" || req.Pool == nil {
					t.Fatalf("the function got %+v", req)
				}
				// Every ticket alone on the first team: whatever the pool, an answer.
				var out []client.ProposedMatch
				for _, tk := range req.Pool {
					out = append(out, client.ProposedMatch{Teams: []client.ProposedTeam{{Tickets: []string{tk.Id}}}})
				}
				return out, nil
			}}
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set(queue.SignatureHeader, queue.Sign(functionSecret, functionEpoch.Unix(), "q:tick:1", body))
		r.Header.Set(queue.DeliveryHeader, "q:tick:1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		switch rec.Code {
		case http.StatusOK:
			var n struct {
				Pool []json.RawMessage `json:"pool"`
			}
			_ = json.Unmarshal(body, &n)
			if _, err := queue.DecodeFunctionAnswer(rec.Body.Bytes(), len(n.Pool)); err != nil {
				t.Fatalf("the service cannot read the answer %s: %v", rec.Body, err)
			}
		case http.StatusBadRequest:
			if rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("a 400 of %s", rec.Header().Get("Content-Type"))
			}
		default:
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
}
