package queue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// wireQueue is a queue whose pool shows every part of a ticket: roles, attributes,
// latencies, and tolerances of the interval, the latency and a widening rule.
func wireQueue() queue.Queue {
	q := queue.DefaultQueue("ranked")
	q.TeamSize, q.MaxPartySize, q.Roles = 2, 2, []string{"tank", "dps"}
	q.Composition = map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}
	q.Regions = []string{"us", "eu"}
	q.Expansions.MaxLatencyMS = []queue.Step{{AfterS: 0, Value: 50}, {AfterS: 20, Value: 120}}
	q.Attributes = map[string]matchrules.Attribute{"maps": {Type: matchrules.TypeStringList}, "level": {Type: matchrules.TypeNumber},
		"mode": {Type: matchrules.TypeString}}
	q.Rules = []matchrules.Rule{{Name: "close", Kind: matchrules.RuleDistance, Attribute: "level",
		Expansions: []matchrules.Step{{AfterS: 0, Value: 2}, {AfterS: 15, Value: 5}}}}
	return q
}

// The request a match function receives: the queue, the call's counter and times, the
// queue's shape, and each ticket of the pool with what the function needs to decide (a
// low-priority player marked so).
func TestFunctionRequestJSON(t *testing.T) {
	t.Parallel()
	q := wireQueue()
	a := withRoles(poolTicket("a", 30, 1000.5, 990), "tank", "")
	a.Attributes = map[string]matchrules.Value{"maps": matchrules.ListValue("dust", "nuke"), "level": matchrules.NumberValue(7),
		"mode": matchrules.StringValue("duo \"ranked\"")}
	a.Latencies = map[string]float64{"eu": 31, "us": 95.5}
	b := poolTicket("b", 5, 1200)
	b.Players[0].LowPriority = true
	req := queue.FunctionRequest{Queue: &q, Tick: 42, Now: epoch, Deadline: epoch.Add(queue.DefaultFunctionTimeout), Pool: []queue.Ticket{a, b}}
	body := queue.AppendFunctionRequest([]byte("prefix:"), req)
	got, ok := strings.CutPrefix(string(body), "prefix:")
	if !ok {
		t.Fatalf("the request did not append to the buffer: %s", body)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatalf("the request is not JSON: %v\n%s", err, got)
	}
	want := `{"queue":"ranked","tick":42,"now":"2026-12-01T12:00:00Z","deadline":"2026-12-01T12:00:01Z","teams":2,"team_size":2,` +
		`"composition":{"tank":{"min":1,"max":1}},"roles":["tank","dps"],"pool":[` +
		`{"id":"a","players":[{"id":"a-1","rating":1000.5,"roles":["tank"]},{"id":"a-2","rating":990}],` +
		`"attributes":{"level":7,"maps":["dust","nuke"],"mode":"duo \"ranked\""},"latencies_ms":{"eu":31,"us":95.5},` +
		`"created_at":"2026-12-01T11:59:30Z","wait_s":30,"tolerances":{"interval":150,"max_latency_ms":120,"rules":{"close":5}}},` +
		`{"id":"b","players":[{"id":"b-1","rating":1200,"low_priority":true}],"created_at":"2026-12-01T11:59:55Z","wait_s":5,` +
		`"tolerances":{"interval":25,"max_latency_ms":50,"rules":{"close":2}}}]}`
	if got != want {
		t.Errorf("request\n%s\nwant\n%s", got, want)
	}
	if d := req.Delivery(); d != "ranked:tick:42" {
		t.Errorf("delivery %q", d)
	}
}

func TestFunctionAnswerDecode(t *testing.T) {
	t.Parallel()
	ok := []struct {
		name, body string
		want       []queue.ProposedMatch
	}{
		{"none", `{"matches": []}`, []queue.ProposedMatch{}},
		{"two", `{"matches": [{"teams": [{"tickets": ["a", "b"]}, {"tickets": ["c"]}]},
			{"teams": [{"tickets": ["d"]}, {"tickets": ["e"]}], "roles": {"d-1": "tank"}, "attributes": {"map": "dust", "n": 3, "l": ["x"]}, "region": "eu"}]}`,
			[]queue.ProposedMatch{{Teams: [][]string{{"a", "b"}, {"c"}}},
				{Teams: [][]string{{"d"}, {"e"}}, Roles: map[string]string{"d-1": "tank"}, Region: "eu",
					Attributes: map[string]matchrules.Value{"map": matchrules.StringValue("dust"), "n": matchrules.NumberValue(3), "l": matchrules.ListValue("x")}}}},
	}
	for _, tc := range ok {
		got, err := queue.DecodeFunctionAnswer([]byte(tc.body), 10)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	bad := []struct{ name, body string }{
		{"not JSON", `<html>oops</html>`},
		{"empty", ``},
		{"no matches", `{}`},
		{"null matches", `{"matches": null}`},
		{"an unknown member", `{"matches": [], "score": 3}`},
		{"an unknown member of a match", `{"matches": [{"teams": [], "quality": 1}]}`},
		{"a repeated member", `{"matches": [], "matches": []}`},
		{"a number for a ticket", `{"matches": [{"teams": [{"tickets": [1]}]}]}`},
		{"a null attribute", `{"matches": [{"teams": [], "attributes": {"map": null}}]}`},
		{"more matches than tickets", `{"matches": [{"teams": []}, {"teams": []}, {"teams": []}]}`},
		{"trailing garbage", `{"matches": []} {}`},
		{"far too large", `{"matches": [], "pad": "` + strings.Repeat("x", queue.MaxFunctionAnswer) + `"}`},
	}
	for _, tc := range bad {
		if got, err := queue.DecodeFunctionAnswer([]byte(tc.body), 2); !errors.Is(err, queue.ErrFunctionUnreadable) {
			t.Errorf("%s: %v, %v; want ErrFunctionUnreadable", tc.name, got, err)
		}
	}
}

// Whatever a function answers, the decoder returns matches or ErrFunctionUnreadable, and the
// check of what it returns rejects or makes each match without a panic.
func FuzzFunctionAnswer(f *testing.F) {
	f.Add([]byte(`{"matches": [{"teams": [{"tickets": ["a"]}, {"tickets": ["b"]}]}]}`))
	f.Add([]byte(`{"matches": [{"teams": [{"tickets": ["a", "a"]}, {"tickets": ["b", "zz"]}], "roles": {"a-1": "tank"}, "region": "eu"}]}`))
	f.Add([]byte(`{"matches": [{"teams": [{"tickets": ["c"]}, {"tickets": []}, {"tickets": ["b"]}], "attributes": {"maps": ["dust"], "level": 2}}]}`))
	f.Add([]byte(`{"matches": []}`))
	f.Add([]byte(`not json`))
	q := wireQueue()
	pool := []queue.Ticket{withRoles(poolTicket("a", 5, 1000, 1000), "tank", "dps"), withRoles(poolTicket("b", 5, 1000, 1000), "dps", "tank"),
		poolTicket("c", 50, 1000)}
	f.Fuzz(func(t *testing.T, body []byte) {
		ps, err := queue.DecodeFunctionAnswer(body, len(pool))
		if err != nil {
			if !errors.Is(err, queue.ErrFunctionUnreadable) {
				t.Fatalf("an error that is not ErrFunctionUnreadable: %v", err)
			}
			return
		}
		made, rejected := (&queue.FunctionCheck{Queue: &q, Pool: pool, Now: epoch}).Check(ps)
		if len(made)+len(rejected) != len(ps) {
			t.Fatalf("%d made and %d rejected of %d proposals", len(made), len(rejected), len(ps))
		}
		seen := map[string]bool{}
		for _, m := range made {
			for _, id := range m.Tickets() {
				if seen[id] {
					t.Fatalf("ticket %s made twice", id)
				}
				seen[id] = true
			}
		}
	})
}

// The pool is written straight from the queue's tickets: the allocations of a request do not
// grow with the pool (one per call, beside the buffer kept from call to call).
func TestFunctionRequestAllocatesNothingPerTicket(t *testing.T) {
	q := wireQueue()
	pool := make([]queue.Ticket, 2000)
	for i := range pool {
		pool[i] = withRoles(poolTicket(fmt.Sprintf("t%d", i), i%100, 1000, 1010), "tank", "dps")
		pool[i].Attributes = map[string]matchrules.Value{"maps": matchrules.ListValue("dust"), "level": matchrules.NumberValue(3)}
		pool[i].Latencies = map[string]float64{"eu": 20, "us": 80}
	}
	buf := queue.AppendFunctionRequest(nil, queue.FunctionRequest{Queue: &q, Now: epoch, Pool: pool})
	allocs := testing.AllocsPerRun(20, func() {
		buf = queue.AppendFunctionRequest(buf[:0], queue.FunctionRequest{Queue: &q, Now: epoch, Pool: pool})
	})
	if allocs > 50 {
		t.Errorf("%.0f allocations for a pool of %d: the pool must not be copied per ticket", allocs, len(pool))
	}
}

func BenchmarkFunctionRequest(b *testing.B) {
	q := wireQueue()
	pool := make([]queue.Ticket, 5000)
	for i := range pool {
		pool[i] = withRoles(poolTicket(fmt.Sprintf("tk-%08d", i), i%100, 1000, 1010), "tank", "dps")
		pool[i].Attributes = map[string]matchrules.Value{"maps": matchrules.ListValue("dust"), "level": matchrules.NumberValue(3)}
		pool[i].Latencies = map[string]float64{"eu": 20, "us": 80}
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = queue.AppendFunctionRequest(buf[:0], queue.FunctionRequest{Queue: &q, Now: epoch, Pool: pool})
	}
	b.SetBytes(int64(len(buf)))
}
