package handlers

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// pairTwo is a Matcher for 1v1 queues that pairs waiting tickets two by two, oldest first;
// the real pass (matchmaker/tick) is tested in its package and end to end in cmd/api.
type pairTwo struct{}

func (pairTwo) Match(q queue.Queue, waiting []queue.Ticket, now time.Time) (queue.TickWrite, error) {
	var w queue.TickWrite
	for i := 0; i+1 < len(waiting); i += 2 {
		a, b := waiting[i], waiting[i+1]
		w.Matches = append(w.Matches, queue.Match{ID: "mt-" + a.ID, CreatedAt: now, Teams: []queue.MatchTeam{
			{Players: []queue.MatchPlayer{{ID: a.Players[0].ID, TicketID: a.ID, Rating: a.Players[0].Rating}}, RatingTotal: a.Players[0].Rating},
			{Players: []queue.MatchPlayer{{ID: b.Players[0].ID, TicketID: b.ID, Rating: b.Players[0].Rating}}, RatingTotal: b.Players[0].Rating},
		}, Pairs: []queue.Pair{{Players: [2]string{a.Players[0].ID, b.Players[0].ID}, Difference: math.Abs(b.Players[0].Rating - a.Players[0].Rating), Interval: 25}}})
	}
	return w, nil
}

// queueServer is a server with auth off whose queue service runs its tick loop (every 20 ms).
func queueServer(t *testing.T) (http.Handler, *queuesvc.Service) {
	t.Helper()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: pairTwo{},
		Config: queuesvc.Config{QueueRefresh: 20 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- qs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Off: true}}), qs
}

const duelQueue = `{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,"regions":["eu","us"]}`

func TestQueuesAreAdministeredWithPutGetListDelete(t *testing.T) {
	t.Parallel()
	h, _ := queueServer(t)
	put := func(body string) *http.Response {
		return exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json", body)
	}
	if resp := put(duelQueue); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	var q queueJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/queues/duel", "", ""), &q)
	if q.Name != "duel" || q.TeamSize != 1 || q.MaxPartySize != 1 || q.Strategy != "rating_window" || q.TicketTTLS != 300 ||
		len(q.Expansions.Interval) != 3 || q.TickMS != 50 {
		t.Fatalf("defaults: %+v", q)
	}
	withHook := `{"context":{"game_type":"ctf"},"team_size":2,"webhook":{"url":"https://example.com/h","secret":"0123456789abcdef"}}`
	if resp := put(withHook); resp.StatusCode != http.StatusOK {
		t.Fatalf("replace: %d", resp.StatusCode)
	}
	body := readAll(t, exchange(t, h, http.MethodGet, "/v1/queues/duel", "", ""))
	if strings.Contains(body, "0123456789abcdef") || !strings.Contains(body, "https://example.com/h") {
		t.Fatalf("a queue shows its webhook URL, never its secret: %s", body)
	}
	var list queuesResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/queues", "", ""), &list)
	if len(list.Queues) != 1 || list.Queues[0].MaxPartySize != 2 {
		t.Fatalf("list: %+v", list)
	}
	if resp := exchange(t, h, http.MethodDelete, "/v1/queues/duel", "", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if resp := exchange(t, h, http.MethodGet, "/v1/queues/duel", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("get a deleted queue: %d", resp.StatusCode)
	}
}

func TestBadQueuesAndTicketsNameTheField(t *testing.T) {
	t.Parallel()
	h, _ := queueServer(t)
	exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json",
		`{"context":{"game_type":"ctf"},"team_size":2,"max_party_size":2,"regions":["eu","us"]}`)
	tests := []struct {
		method, path, body string
		status             int
		field              string
	}{
		{"PUT", "/v1/queues/q", `{}`, 400, "context"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"team_size":17}`, 400, "team_size"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"teams":1}`, 400, "teams"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"strategy":"random"}`, 400, "strategy"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"expansions":{"interval":[{"after_s":5,"value":25}]}}`, 400, "expansions.interval[0].after_s"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"expansions":{"interval":[{"after_s":0,"value":25},{"after_s":0,"value":50}]}}`, 400, "expansions.interval[1].after_s"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"team_size":2,"max_party_size":3}`, 400, "max_party_size"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"ticket_ttl_s":0}`, 400, "ticket_ttl_s"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"tick_ms":1}`, 400, "tick_ms"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"webhook":{"url":"ftp://x","secret":"short"}}`, 400, "webhook.url"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"webhook":{"url":"https://x.example","secret":"short"}}`, 400, "webhook.secret"},
		{"PUT", "/v1/queues/bad%20name", `{"context":{"game_type":"ctf"}}`, 400, "name"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"tem_size":2}`, 400, "tem_size"},
		{"POST", "/v1/queues/duel/tickets", `{"players":[]}`, 400, "players"},
		{"POST", "/v1/queues/duel/tickets", `{"players":[{"id":"a"},{"id":"b"},{"id":"c"}]}`, 400, "players"},
		{"POST", "/v1/queues/duel/tickets", `{"players":[{"id":"a"},{"id":"a"}]}`, 400, "players[1].id"},
		{"POST", "/v1/queues/duel/tickets", `{"players":[{"id":"a\u0000"}]}`, 400, "players[0].id"},
		{"POST", "/v1/queues/duel/tickets", `{"players":[{"id":"a","rating":"x"}]}`, 400, "players[0].rating"},
		{"POST", "/v1/queues/duel/tickets", `{"players":[{"id":"a"}],"latencies_ms":{"mars":10}}`, 400, "latencies_ms"},
		{"POST", "/v1/queues/duel/tickets", `{"players":[{"id":"a"}],"ttl_s":0}`, 400, "ttl_s"},
		{"POST", "/v1/queues/duel/tickets", `{"players":[{"id":"a"}],"ttl_s":100000}`, 400, "ttl_s"},
		{"POST", "/v1/queues/nope/tickets", `{"players":[{"id":"a"}]}`, 404, ""},
		{"GET", "/v1/tickets/nope", ``, 404, ""},
		{"GET", "/v1/tickets/a%00b", ``, 400, "id"},
		{"GET", "/v1/matches/nope", ``, 404, ""},
		{"DELETE", "/v1/tickets/nope", ``, 404, ""},
		{"GET", "/v1/queues/nope/events", ``, 404, ""},
		{"GET", "/v1/queues/duel/events?after=-1", ``, 400, "after"},
	}
	for _, tt := range tests {
		ctype := ""
		if tt.body != "" {
			ctype = "application/json"
		}
		resp := exchange(t, h, tt.method, tt.path, ctype, tt.body)
		if resp.StatusCode != tt.status {
			t.Errorf("%s %s %s: %d, want %d", tt.method, tt.path, tt.body, resp.StatusCode, tt.status)
			continue
		}
		if p := readProblem(t, resp); tt.field != "" && !hasField(p, tt.field) {
			t.Errorf("%s %s %s: problem does not name %q: %+v", tt.method, tt.path, tt.body, tt.field, p.Errors)
		}
	}
}

// A ticket is created (201, committed), replayed with its Idempotency-Key (200), refused for
// a player already searching (409 naming the ticket), long-polled until the tick matches it,
// and its match is readable; a matched ticket cannot be cancelled.
func TestTicketsFromCreationToMatch(t *testing.T) {
	t.Parallel()
	h, _ := queueServer(t)
	exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json", duelQueue)
	create := func(body string, headers ...string) *http.Response {
		return exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", body, headers...)
	}
	resp := create(`{"players":[{"id":"alice","rating":1200}],"latencies_ms":{"eu":30}}`, "Idempotency-Key", "k-1")
	var a ticketJSON
	if decodeJSON(t, resp, &a); resp.StatusCode != http.StatusCreated || a.Status != "searching" || a.Players[0].Rating != 1200 ||
		a.Players[0].RatingSource != "inline" || resp.Header.Get("Location") != "/v1/tickets/"+a.ID {
		t.Fatalf("create: %d %+v", resp.StatusCode, a)
	}
	resp = create(`{"latencies_ms":{"eu":30},"players":[{"rating":1200,"id":"alice"}]}`, "Idempotency-Key", "k-1")
	var again ticketJSON
	if decodeJSON(t, resp, &again); resp.StatusCode != http.StatusOK || again.ID != a.ID || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %+v", resp.StatusCode, again)
	}
	if resp := create(`{"players":[{"id":"alice","rating":1300}]}`, "Idempotency-Key", "k-1"); resp.StatusCode != http.StatusConflict {
		t.Fatalf("the key with another body: %d", resp.StatusCode)
	}
	resp = create(`{"players":[{"id":"alice"}]}`)
	if p := readProblem(t, resp); resp.StatusCode != http.StatusConflict || !hasField(p, "players[0].id") || !strings.Contains(p.Errors[0].Message, a.ID) {
		t.Fatalf("alice again: %d %+v", resp.StatusCode, p)
	}

	polled := make(chan ticketJSON, 1)
	go func() {
		var got ticketJSON
		decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+a.ID+"?wait_s=10", "", ""), &got)
		polled <- got
	}()
	time.Sleep(30 * time.Millisecond)
	var b ticketJSON
	decodeJSON(t, create(`{"players":[{"id":"bob"}]}`), &b)
	var got ticketJSON
	select {
	case got = <-polled:
	case <-time.After(10 * time.Second):
		t.Fatal("the long-poll did not answer")
	}
	if got.Status != "matched" || got.Assignment == nil || len(got.Assignment.Teams) != 2 {
		t.Fatalf("long-poll: %+v", got)
	}
	var m matchOutJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/matches/"+got.Assignment.MatchID, "", ""), &m)
	if m.Queue != "duel" || len(m.Tickets) != 2 || len(m.Pairs) != 1 || m.Teams[got.Assignment.Team].Players[0].ID != "alice" {
		t.Fatalf("match: %+v", m)
	}
	if resp := exchange(t, h, http.MethodDelete, "/v1/tickets/"+a.ID, "", ""); resp.StatusCode != http.StatusConflict {
		t.Fatalf("cancel a matched ticket: %d", resp.StatusCode)
	}
	if resp := exchange(t, h, http.MethodGet, "/v1/tickets/"+a.ID+"?wait_s=61", "", ""); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("wait_s above 60: %d", resp.StatusCode)
	}
}

// The event stream sends each ticket change with its id, and resumes after Last-Event-ID; a
// stream of one ticket (?ticket=) sends that ticket's changes only, and a filter that is not a
// ticket id is a 400 naming ticket.
func TestQueueEventsStreamAndResume(t *testing.T) {
	t.Parallel()
	h, _ := queueServer(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json", duelQueue)
	create := func(p string) string {
		var tk ticketJSON
		decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", `{"players":[{"id":"`+p+`"}]}`), &tk)
		return tk.ID
	}
	// c is cancelled before a and b exist, so its event comes first whenever the tick runs.
	if resp := exchange(t, h, http.MethodDelete, "/v1/tickets/"+create("c"), "", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	create("a")
	b := create("b")
	read := func(query, lastEventID string, n int) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/queues/duel/events?after=0"+query, nil)
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var events []string
		sc := bufio.NewScanner(resp.Body)
		var id, event string
		for len(events) < n && sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if !strings.Contains(line, `"seq":`+id) {
					t.Errorf("data %s does not carry its id %s", line, id)
				}
			case line == "" && id != "":
				events = append(events, fmt.Sprintf("%s:%s", id, event))
				id, event = "", ""
			}
		}
		return events
	}
	all := read("", "", 3) // the cancel, then the tick's match of a and b
	if len(all) != 3 || all[0] != "1:cancelled" || all[1] != "2:matched" || all[2] != "3:matched" {
		t.Fatalf("events: %v", all)
	}
	if rest := read("", "2", 1); len(rest) != 1 || rest[0] != "3:matched" {
		t.Fatalf("resumed after 2: %v", rest)
	}
	var bs string // b's event among the match's two
	for _, e := range all[1:] {
		id, _, _ := strings.Cut(e, ":")
		if strings.Contains(readEventData(t, srv.URL, id), `"ticket_id":"`+b+`"`) {
			bs = e
		}
	}
	if only := read("&ticket="+b, "", 1); len(only) != 1 || only[0] != bs {
		t.Fatalf("the stream of b's events: %v, want %s alone", only, bs)
	}
	resp := exchange(t, h, http.MethodGet, "/v1/queues/duel/events?ticket=tk-%01", "", "")
	if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != "ticket" {
		t.Fatalf("a ticket filter that is not an id: %d %+v", resp.StatusCode, p)
	}
}

// readEventData is the data of the queue duel's event id, read from a stream after id-1.
func readEventData(t *testing.T, base, id string) string {
	t.Helper()
	n, err := strconv.Atoi(id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/queues/duel/events?after="+strconv.Itoa(n-1), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return data
		}
	}
	t.Fatalf("no event after %d", n-1)
	return ""
}

// A stream cannot resume from an event that is no longer kept (the client was away longer
// than the retention) nor from one past the newest: a 410 names the events kept, where the
// stream used to resume silently from the oldest kept one and the client never learned of
// the changes it missed.
func TestQueueEventsResumeOutsideTheKeptEventsIsGone(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: store, Ratings: rs, Matcher: pairTwo{}})
	h := NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Off: true}})
	exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json", duelQueue)
	cancelOne := func(p string) {
		var tk ticketJSON
		decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", `{"players":[{"id":"`+p+`"}]}`), &tk)
		if resp := exchange(t, h, http.MethodDelete, "/v1/tickets/"+tk.ID, "", ""); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("cancel: %d", resp.StatusCode)
		}
	}
	for _, p := range []string{"a", "b", "c", "d"} { // events 1..4, purged below
		cancelOne(p)
	}
	if _, err := store.Purge(context.Background(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	cancelOne("e") // event 5, kept
	cancelOne("f") // event 6
	for _, tc := range []struct {
		header, query, field, detail string
	}{
		{"2", "", "Last-Event-ID", "events 5 to 6 are kept"},
		{"", "1", "after", "events 5 to 6 are kept"},
		{"9", "", "Last-Event-ID", "events 5 to 6 are kept"},
	} {
		path, headers := "/v1/queues/duel/events", []string{}
		if tc.query != "" {
			path += "?after=" + tc.query
		}
		if tc.header != "" {
			headers = append(headers, "Last-Event-ID", tc.header)
		}
		resp := exchange(t, h, http.MethodGet, path, "", "", headers...)
		p := readProblem(t, resp)
		if resp.StatusCode != http.StatusGone || len(p.Errors) != 1 || p.Errors[0].Field != tc.field || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("resume %+v: %d %+v", tc, resp.StatusCode, p)
		}
	}
}

// A long-poll as long as the server's write timeout still answers (the write deadline is the
// wait's), and an event stream's headers reach the client at once, before any event.
func TestLongWaitsAnswerAndStreamsOpenAtOnce(t *testing.T) {
	t.Parallel()
	h, _ := queueServer(t)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.WriteTimeout = 500 * time.Millisecond
	srv.Start()
	defer srv.Close()
	exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json", duelQueue)
	var tk ticketJSON
	decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", `{"players":[{"id":"alone"}]}`), &tk)

	resp, err := http.Get(srv.URL + "/v1/tickets/" + tk.ID + "?wait_s=1")
	if err != nil {
		t.Fatalf("a 1 s long-poll behind a 0.5 s write timeout: %v", err)
	}
	var got ticketJSON
	decodeJSON(t, resp, &got)
	if got.Status != "searching" {
		t.Fatalf("long-poll answered %+v", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/queues/duel/events", nil)
	start := time.Now()
	stream, err := http.DefaultClient.Do(req) // returns with the headers
	if err != nil {
		t.Fatalf("the stream's headers did not come within 5 s (the keep-alive is at 15 s): %v", err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK || time.Since(start) > 4*time.Second {
		t.Fatalf("stream: %d after %v", stream.StatusCode, time.Since(start))
	}
}

// Event streams and long-polls are capped per caller (429) and per replica (503), both with
// Retry-After; a wait that ends gives its place back.
func TestWaitsAreCapped(t *testing.T) {
	t.Parallel()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: pairTwo{}})
	limits := DefaultLimits()
	limits.Waiters = WaitLimits{PerReplica: 3, PerCaller: 2}
	keys := []APIKey{{Name: "a", Scopes: []Scope{ScopeAdmin, ScopeMatch}, Hash: sha256.Sum256([]byte("key-a"))},
		{Name: "b", Scopes: []Scope{ScopeMatch}, Hash: sha256.Sum256([]byte("key-b"))}}
	srv := httptest.NewServer(NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Keys: keys}, Limits: limits}))
	defer srv.Close()
	call := func(key, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	put, _ := http.NewRequest(http.MethodPut, srv.URL+"/v1/queues/duel", strings.NewReader(duelQueue))
	put.Header.Set("Authorization", "Bearer key-a")
	put.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(put); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %v %v", resp, err)
	}
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for _, key := range []string{"key-a", "key-a", "key-b"} {
		resp := call(key, "/v1/queues/duel/events")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d for %s: %d", len(open), key, resp.StatusCode)
		}
		open = append(open, resp)
	}
	for _, tc := range []struct {
		key    string
		status int
	}{{"key-a", http.StatusTooManyRequests}, {"key-b", http.StatusServiceUnavailable}} {
		resp := call(tc.key, "/v1/queues/duel/events")
		validateResponse(t, resp.Request, resp)
		if p := readProblem(t, resp); resp.StatusCode != tc.status || resp.Header.Get("Retry-After") == "" || p.Status != tc.status {
			t.Fatalf("a stream past the cap for %s: %d %+v (Retry-After %q), want %d", tc.key, resp.StatusCode, p, resp.Header.Get("Retry-After"), tc.status)
		}
	}
	open[2].Body.Close() // b's stream ends: its place is free again
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp := call("key-b", "/v1/queues/duel/events")
		if resp.StatusCode == http.StatusOK {
			open = append(open, resp)
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("after a stream ended, a new one still gets %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
