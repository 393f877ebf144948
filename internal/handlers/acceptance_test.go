package handlers

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/outbound"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// keyedQueueServer is a server with three keys, whose queue service ticks every 20 ms:
// studio-a and studio-b (scope match) and ops (admin and match).
func keyedQueueServer(t *testing.T) http.Handler {
	t.Helper()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")} // the tests' allocators
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: pairTwo{},
		Outbound: outbound.New(queue.WebhookPolicy{Allow: loopback}, queuesvc.DefaultWebhookTimeout),
		Config:   queuesvc.Config{QueueRefresh: 20 * time.Millisecond, WebhookAllow: loopback}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- qs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	keys := []APIKey{
		{Name: "studio-a", Scopes: []Scope{ScopeMatch}, Hash: sha256.Sum256([]byte("key-a"))},
		{Name: "studio-b", Scopes: []Scope{ScopeMatch}, Hash: sha256.Sum256([]byte("key-b"))},
		{Name: "ops", Scopes: []Scope{ScopeAdmin, ScopeMatch, ScopeRead}, Hash: sha256.Sum256([]byte("key-ops"))},
	}
	return NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Keys: keys}})
}

// as sends a request with key's bearer token (and headers), validated against the spec.
func as(t *testing.T, h http.Handler, key, method, path, body string, headers ...string) *http.Response {
	t.Helper()
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	return exchange(t, h, method, path, ct, body, append([]string{"Authorization", "Bearer " + key}, headers...)...)
}

func TestTicketsBelongToTheKeyThatCreatedThem(t *testing.T) {
	t.Parallel()
	h := keyedQueueServer(t)
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/duel", duelQueue); resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %d", resp.StatusCode)
	}
	var a ticketJSON
	decodeJSON(t, as(t, h, "key-a", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"alice"}]}`, "Idempotency-Key", "k-1"), &a)
	for _, tc := range []struct {
		key, method string
		status      int
	}{
		{"key-b", http.MethodGet, http.StatusNotFound},
		{"key-b", http.MethodDelete, http.StatusNotFound},
		{"key-a", http.MethodGet, http.StatusOK},
		{"key-ops", http.MethodGet, http.StatusOK},
	} {
		resp := as(t, h, tc.key, tc.method, "/v1/tickets/"+a.ID, "")
		body := readAll(t, resp)
		if resp.StatusCode != tc.status {
			t.Fatalf("%s %s by %s: %d, want %d", tc.method, a.ID, tc.key, resp.StatusCode, tc.status)
		}
		if tc.status == http.StatusNotFound && !strings.Contains(body, "no ticket") {
			t.Fatalf("another key's ticket must read as an unknown one: %s", body)
		}
	}
	// Another key's conflict for alice does not name her ticket; the owner's does.
	resp := as(t, h, "key-b", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"alice"}]}`)
	if body := readAll(t, resp); resp.StatusCode != http.StatusConflict || strings.Contains(body, a.ID) || !strings.Contains(body, "players[0].id") {
		t.Fatalf("another key's conflict: %d %s", resp.StatusCode, body)
	}
	resp = as(t, h, "key-a", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"alice"}]}`)
	if body := readAll(t, resp); resp.StatusCode != http.StatusConflict || !strings.Contains(body, a.ID) {
		t.Fatalf("the owner's conflict: %d %s", resp.StatusCode, body)
	}
	// Idempotency keys are per API key: studio-b's k-1 is its own ticket.
	resp = as(t, h, "key-b", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"bob"}]}`, "Idempotency-Key", "k-1")
	var b ticketJSON
	if decodeJSON(t, resp, &b); resp.StatusCode != http.StatusCreated || b.ID == a.ID {
		t.Fatalf("another key's idempotency key: %d %+v", resp.StatusCode, b)
	}
	if resp := as(t, h, "key-a", http.MethodDelete, "/v1/tickets/"+b.ID, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("cancel another key's ticket: %d", resp.StatusCode)
	}
}

// waitStatus long-polls ticket id (as key) until its status is want, for up to 10 s.
func waitStatus(t *testing.T, h http.Handler, key, id string, want queue.Status) ticketJSON {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var tk ticketJSON
		decodeJSON(t, as(t, h, key, http.MethodGet, "/v1/tickets/"+id+"?wait_s=2", ""), &tk)
		if tk.Status == want {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticket %s is %s, want %s", id, tk.Status, want)
		}
	}
}

func TestReadyCheckOverHTTP(t *testing.T) {
	t.Parallel()
	h := keyedQueueServer(t)
	q := `{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,"acceptance":{"timeout_s":60}}`
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/duel", q); resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %d", resp.StatusCode)
	}
	var def queueJSON
	if decodeJSON(t, as(t, h, "key-ops", http.MethodGet, "/v1/queues/duel", ""), &def); def.Acceptance == nil || *def.Acceptance.TimeoutS != 60 {
		t.Fatalf("the queue's acceptance: %+v", def.Acceptance)
	}
	var a, b ticketJSON
	decodeJSON(t, as(t, h, "key-a", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"alice"}]}`), &a)
	decodeJSON(t, as(t, h, "key-b", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"bob"}]}`), &b)
	pa := waitStatus(t, h, "key-a", a.ID, queue.Proposed)
	if pa.Proposal == nil || len(pa.Proposal.Teams) != 2 || pa.Assignment != nil || pa.Proposal.AcceptBy.Sub(pa.UpdatedAt) != 60*time.Second {
		t.Fatalf("a proposed ticket: %+v", pa)
	}
	match := pa.Proposal.MatchID
	path := "/v1/matches/" + match + "/acceptance"
	// Only alice's owner (or an admin) answers for her.
	if resp := as(t, h, "key-b", http.MethodPost, path, `{"player_id":"alice","accept":true}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another key answers for alice: %d", resp.StatusCode)
	}
	var p proposalJSON
	if decodeJSON(t, as(t, h, "key-a", http.MethodPost, path, `{"player_id":"alice","accept":true}`), &p); p.Status != queue.ProposalOpen ||
		len(p.Players) != 2 || p.Players[0].Answer != "accepted" || p.Players[1].Answer != "pending" {
		t.Fatalf("alice accepts: %+v", p)
	}
	if decodeJSON(t, as(t, h, "key-b", http.MethodPost, path, `{"player_id":"bob","accept":false}`), &p); p.Status != queue.ProposalDeclined || p.ResolvedAt == nil {
		t.Fatalf("bob declines: %+v", p)
	}
	if resp := as(t, h, "key-a", http.MethodPost, path, `{"player_id":"alice","accept":true}`); resp.StatusCode != http.StatusConflict {
		t.Fatalf("an answer to a resolved proposal: %d", resp.StatusCode)
	}
	var gb ticketJSON
	if decodeJSON(t, as(t, h, "key-b", http.MethodGet, "/v1/tickets/"+b.ID, ""), &gb); gb.Status != queue.Cancelled || gb.Reason != queue.ReasonDeclined {
		t.Fatalf("the decliner's ticket: %+v", gb)
	}
	ga := waitStatus(t, h, "key-a", a.ID, queue.Searching)
	if !ga.CreatedAt.Equal(a.CreatedAt) || ga.Proposal != nil {
		t.Fatalf("alice is back with her wait: %+v (created %v)", ga, a.CreatedAt)
	}
	if resp := as(t, h, "key-ops", http.MethodGet, "/v1/matches/"+match, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a declined proposal is no match: %d", resp.StatusCode)
	}

	// With carol, alice is proposed again; both accept and the match is made.
	var c ticketJSON
	decodeJSON(t, as(t, h, "key-b", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"carol"}]}`), &c)
	pa = waitStatus(t, h, "key-a", a.ID, queue.Proposed)
	path = "/v1/matches/" + pa.Proposal.MatchID + "/acceptance"
	decodeJSON(t, as(t, h, "key-ops", http.MethodPost, path, `{"player_id":"carol","accept":true}`), &p) // an admin answers for anyone
	if decodeJSON(t, as(t, h, "key-a", http.MethodPost, path, `{"player_id":"alice","accept":true}`), &p); p.Status != queue.ProposalAccepted {
		t.Fatalf("both accepted: %+v", p)
	}
	ga = waitStatus(t, h, "key-a", a.ID, queue.Matched)
	if ga.Assignment == nil || ga.Assignment.MatchID != pa.Proposal.MatchID {
		t.Fatalf("alice matched: %+v", ga)
	}
	if resp := as(t, h, "key-ops", http.MethodGet, "/v1/matches/"+pa.Proposal.MatchID, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("the accepted match: %d", resp.StatusCode)
	}
}

func TestBadAcceptanceNamesTheField(t *testing.T) {
	t.Parallel()
	h := keyedQueueServer(t)
	for _, tc := range []struct {
		method, path, body string
		status             int
		field              string
	}{
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"acceptance":{"timeout_s":0}}`, 400, "acceptance.timeout_s"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"acceptance":{"timeout_s":601}}`, 400, "acceptance.timeout_s"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"acceptance":{}}`, 400, "acceptance.timeout_s"},
		{"PUT", "/v1/queues/q", `{"context":{"game_type":"ctf"},"acceptance":{"timeout":5}}`, 400, "acceptance.timeout"},
		{"POST", "/v1/matches/m1/acceptance", `{"player_id":"alice"}`, 400, "accept"},
		{"POST", "/v1/matches/m1/acceptance", `{"player_id":"a\u0000","accept":true}`, 400, "player_id"},
		{"POST", "/v1/matches/m1/acceptance", `{"player_id":"alice","accept":"yes"}`, 400, "accept"},
		{"POST", "/v1/matches/m1/acceptance", `{"player_id":"alice","accept":true}`, 404, ""},
	} {
		resp := as(t, h, "key-ops", tc.method, tc.path, tc.body)
		p := readProblem(t, resp)
		if resp.StatusCode != tc.status || (tc.field != "" && !hasField(p, tc.field)) {
			t.Errorf("%s %s %s: %d %+v, want %d naming %q", tc.method, tc.path, tc.body, resp.StatusCode, p, tc.status, tc.field)
		}
	}
}

func TestPlacementOverHTTP(t *testing.T) {
	t.Parallel()
	h := keyedQueueServer(t)
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/duel", duelQueue); resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %d", resp.StatusCode)
	}
	var a, b ticketJSON
	decodeJSON(t, as(t, h, "key-a", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"alice"}]}`), &a)
	decodeJSON(t, as(t, h, "key-a", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"bob"}]}`), &b)
	ga := waitStatus(t, h, "key-a", a.ID, queue.Matched)
	path := "/v1/matches/" + ga.Assignment.MatchID + "/placement"
	for _, tc := range []struct {
		key, body string
		status    int
		field     string
	}{
		{"key-a", `{}`, 400, "connection"},
		{"key-a", `{"connection":"10.0.0.7"}`, 400, "connection"},
		{"key-a", `{"connection":[1]}`, 400, "connection"},
		{"key-a", `{"connection":{"a":"` + strings.Repeat("x", 5000) + `"}}`, 400, "connection"},
		{"key-b", `{"connection":{"address":"10.0.0.7"}}`, 404, ""},
		{"key-a", `{"connection":{"address":"10.0.0.7"}}`, 200, ""},
	} {
		resp := as(t, h, tc.key, http.MethodPut, path, tc.body)
		if resp.StatusCode != tc.status {
			t.Fatalf("%s %s: %d, want %d", tc.key, tc.body[:min(len(tc.body), 40)], resp.StatusCode, tc.status)
		}
		if tc.field != "" && !hasField(readProblem(t, resp), tc.field) {
			t.Fatalf("%s: the problem does not name %s", tc.body, tc.field)
		}
	}
	var m matchOutJSON
	if decodeJSON(t, as(t, h, "key-a", http.MethodPut, path, `{"connection":{"address":"10.0.0.7","port":7777}}`), &m); string(m.Connection) != `{"address":"10.0.0.7","port":7777}` {
		t.Fatalf("the placed match: %s", m.Connection)
	}
	var gb ticketJSON
	if decodeJSON(t, as(t, h, "key-a", http.MethodGet, "/v1/tickets/"+b.ID, ""), &gb); string(gb.Assignment.Connection) != `{"address":"10.0.0.7","port":7777}` {
		t.Fatalf("bob's assignment: %+v", gb.Assignment)
	}
	if resp := as(t, h, "key-a", http.MethodPut, "/v1/matches/nope/placement", `{"connection":{}}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an unknown match: %d", resp.StatusCode)
	}
}

func TestAllocatorPlacementOverHTTP(t *testing.T) {
	t.Parallel()
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no server free", http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	h := keyedQueueServer(t)
	q := `{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,"allocator":{"url":"` + busy.URL + `","secret":"0123456789abcdef","timeout_s":60}}`
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/duel", q); resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %d", resp.StatusCode)
	}
	body := readAll(t, as(t, h, "key-ops", http.MethodGet, "/v1/queues/duel", ""))
	if strings.Contains(body, "0123456789abcdef") || !strings.Contains(body, `"timeout_s":60`) {
		t.Fatalf("a queue shows its allocator, never its secret: %s", body)
	}
	var a ticketJSON
	decodeJSON(t, as(t, h, "key-a", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"alice"}]}`), &a)
	decodeJSON(t, as(t, h, "key-a", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"bob"}]}`), new(ticketJSON))
	pa := waitStatus(t, h, "key-a", a.ID, queue.Placing)
	path := "/v1/matches/" + pa.Proposal.MatchID + "/placement"
	if resp := as(t, h, "key-b", http.MethodPut, path, `{"failed":"no server"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another key fails the placement: %d", resp.StatusCode)
	}
	if resp := as(t, h, "key-a", http.MethodPut, path, `{"failed":"no server","connection":{}}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("both failed and a connection: %d", resp.StatusCode)
	}
	if resp := as(t, h, "key-a", http.MethodPut, path, `{"failed":"no server in eu"}`); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("the studio fails the placement: %d", resp.StatusCode)
	}
	// The next tick matches them again, placing anew; the studio answers for the allocator.
	pa = waitStatus(t, h, "key-a", a.ID, queue.Placing)
	var m matchOutJSON
	decodeJSON(t, as(t, h, "key-a", http.MethodPut, "/v1/matches/"+pa.Proposal.MatchID+"/placement", `{"connection":{"address":"10.0.0.7"}}`), &m)
	ga := waitStatus(t, h, "key-a", a.ID, queue.Matched)
	if string(ga.Assignment.Connection) != `{"address":"10.0.0.7"}` || string(m.Connection) != `{"address":"10.0.0.7"}` {
		t.Fatalf("alice's assignment: %+v", ga.Assignment)
	}
	if resp := as(t, h, "key-a", http.MethodPut, "/v1/matches/"+pa.Proposal.MatchID+"/placement", `{"failed":"too late"}`); resp.StatusCode != http.StatusConflict {
		t.Fatalf("failing a placed match: %d", resp.StatusCode)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"context":{"game_type":"ctf"},"allocator":{"url":"ftp://x","secret":"0123456789abcdef"}}`, "allocator.url"},
		{`{"context":{"game_type":"ctf"},"allocator":{"url":"https://x.example","secret":"short"}}`, "allocator.secret"},
		{`{"context":{"game_type":"ctf"},"allocator":{"url":"https://x.example","secret":"0123456789abcdef","timeout_s":0}}`, "allocator.timeout_s"},
	} {
		resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/q", tc.body)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusBadRequest || !hasField(p, tc.field) {
			t.Errorf("%s: %d %+v, want 400 naming %s", tc.body, resp.StatusCode, p, tc.field)
		}
	}
}

// max_searching_per_key caps the searching tickets of each key apart: studio-a at its cap
// gets 429s naming it, while studio-b still creates tickets.
func TestMaxSearchingPerKey(t *testing.T) {
	t.Parallel()
	h := keyedQueueServer(t)
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/capped", `{"context":{"game_type":"ctf"},"team_size":5,"tick_ms":50,"max_searching_per_key":1}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %d", resp.StatusCode)
	}
	if resp := as(t, h, "key-a", http.MethodPost, "/v1/queues/capped/tickets", `{"players":[{"id":"a0"}]}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("studio-a's first ticket: %d", resp.StatusCode)
	}
	// The cap reads the leader's snapshot. Wait for the one that counts a0, alone in the queue:
	// a second ticket of studio-a's made meanwhile would be paired with it by the fake matcher,
	// leaving studio-a nothing searching to be capped on.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st queueStatsJSON
		decodeJSON(t, as(t, h, "key-ops", http.MethodGet, "/v1/queues/capped/stats", ""), &st)
		if st.Source == "leader" && st.SearchingTickets == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader's snapshot never counted studio-a's ticket: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp := as(t, h, "key-a", http.MethodPost, "/v1/queues/capped/tickets", `{"players":[{"id":"a1"}]}`)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("studio-a over its cap: %d, want 429", resp.StatusCode)
	}
	if p := readProblem(t, resp); !hasField(p, "max_searching_per_key") {
		t.Fatalf("429 %+v", p.Errors)
	}
	if resp := as(t, h, "key-b", http.MethodPost, "/v1/queues/capped/tickets", `{"players":[{"id":"b0"}]}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("studio-b under its own cap: %d", resp.StatusCode)
	}
}

// A long-poll told the status its caller last saw answers at once when the ticket is in
// another: a client whose ticket was proposed between two requests learns it now, not when
// the proposal has timed out. Without status it waits from the status it finds.
func TestLongPollWithTheStatusLastSeen(t *testing.T) {
	t.Parallel()
	h := keyedQueueServer(t)
	q := `{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":50,"acceptance":{"timeout_s":60}}`
	if resp := as(t, h, "key-ops", http.MethodPut, "/v1/queues/duel", q); resp.StatusCode != http.StatusCreated {
		t.Fatalf("put queue: %d", resp.StatusCode)
	}
	var a, b ticketJSON
	decodeJSON(t, as(t, h, "key-a", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"alice"}]}`), &a)
	decodeJSON(t, as(t, h, "key-b", http.MethodPost, "/v1/queues/duel/tickets", `{"players":[{"id":"bob"}]}`), &b)
	waitStatus(t, h, "key-a", a.ID, queue.Proposed)
	start := time.Now()
	var tk ticketJSON
	decodeJSON(t, as(t, h, "key-a", http.MethodGet, "/v1/tickets/"+a.ID+"?wait_s=60&status=searching", ""), &tk)
	// The proposal stays open for 60 s: an answer well before that is the at-once answer.
	if took := time.Since(start); tk.Status != queue.Proposed || took > 30*time.Second {
		t.Fatalf("told searching, a proposed ticket answered %s after %v", tk.Status, took)
	}
	resp := as(t, h, "key-a", http.MethodGet, "/v1/tickets/"+a.ID+"?wait_s=1&status=waiting", "")
	if body := readAll(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"status"`) {
		t.Fatalf("an unknown status: %d %s", resp.StatusCode, body)
	}
}
