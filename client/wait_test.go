package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/handlers"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// queueService is the real HTTP handler with a running ticket queue on in-memory stores.
func queueService(t *testing.T) string {
	t.Helper()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: queue.TickPass{},
		Config: queuesvc.Config{QueueRefresh: 20 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- qs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(handlers.NewServer(handlers.Deps{Ratings: rs, Queue: qs, Auth: &handlers.Auth{Off: true}}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A game backend creates its players' tickets and waits for the match with WaitForMatch.
func TestWaitForMatchFollowsATicketToItsMatch(t *testing.T) {
	t.Parallel()
	c, err := client.New(queueService(t), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if resp, err := c.PutQueueWithResponse(ctx, "duel", client.QueueDefinition{
		Context: client.Context{GameType: "ctf"}, TeamSize: new(int32(1)), TickMs: new(int32(50))}); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("queue: %v %v", err, resp)
	}
	var ids []string
	for _, p := range []string{"alice", "bob"} {
		resp, err := c.CreateTicketWithResponse(ctx, "duel", &client.CreateTicketParams{},
			client.TicketRequest{Players: []client.TicketRequestPlayer{{Id: p, Rating: new(1000.0)}}})
		if err != nil || resp.JSON201 == nil {
			t.Fatalf("ticket %s: %v %v", p, err, resp)
		}
		ids = append(ids, resp.JSON201.Id)
	}
	tk, err := client.WaitForMatch(ctx, c, ids[0])
	if err != nil || tk.Status != client.TicketStatusMatched || tk.Assignment == nil || len(tk.Assignment.Teams) != 2 {
		t.Fatalf("WaitForMatch: %+v, %v", tk, err)
	}

	// A cancelled ticket ends the wait with ErrTicketEnded and the ticket's reason.
	resp, err := c.CreateTicketWithResponse(ctx, "duel", &client.CreateTicketParams{},
		client.TicketRequest{Players: []client.TicketRequestPlayer{{Id: "carol", Rating: new(1000.0)}}})
	if err != nil || resp.JSON201 == nil {
		t.Fatalf("carol: %v %v", err, resp)
	}
	go func() {
		time.Sleep(100 * time.Millisecond) // WaitForMatch is long-polling by then, or not: either way it sees the end
		c.CancelTicketWithResponse(context.Background(), resp.JSON201.Id)
	}()
	tk, err = client.WaitForMatch(ctx, c, resp.JSON201.Id)
	if !errors.Is(err, client.ErrTicketEnded) || tk == nil || tk.Status != client.TicketStatusCancelled {
		t.Fatalf("a cancelled ticket: %+v, %v", tk, err)
	}
}

// Unavailable answers are retried; an answer it cannot use (404) is returned.
func TestWaitForMatchRetriesUnavailableAndStopsOnNotFound(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/gone") {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"type":"about:blank","title":"Not Found","status":404}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Write([]byte(`{"id":"tk-1","queue":"q","status":"searching","players":[],"created_at":"2026-11-26T00:00:00Z","expires_at":"2026-11-26T00:05:00Z","updated_at":"2026-11-26T00:00:00Z"}`))
		default:
			w.Write([]byte(`{"id":"tk-1","queue":"q","status":"matched","players":[],"created_at":"2026-11-26T00:00:00Z","expires_at":"2026-11-26T00:05:00Z","updated_at":"2026-11-26T00:00:01Z","assignment":{"match_id":"mt-1","team":0,"teams":[{"players":["a"]},{"players":["b"]}]}}`))
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := client.WaitForMatch(t.Context(), c, "tk-1")
	if err != nil || tk.Assignment == nil || tk.Assignment.MatchId != "mt-1" || calls.Load() != 3 {
		t.Fatalf("WaitForMatch: %+v, %v after %d calls", tk, err, calls.Load())
	}
	if _, err := client.WaitForMatch(t.Context(), c, "gone"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a ticket that does not exist: %v", err)
	}
}

// A ready check that failed and a new proposal made before the next long-poll looked read
// proposed both times: the new proposal is handed to onChange too, so that it is answered.
func TestWaitForMatchHandsEveryProposal(t *testing.T) {
	t.Parallel()
	const ticket = `{"id":"tk-1","queue":"q","players":[],"created_at":"2026-11-26T00:00:00Z","expires_at":"2026-11-26T00:05:00Z","updated_at":"2026-11-26T00:00:00Z",`
	proposal := func(id string) string {
		return `"status":"proposed","proposal":{"match_id":"` + id + `","team":0,"teams":[{"players":["a"]},{"players":["b"]}],"accept_by":"2026-11-26T00:00:20Z"}}`
	}
	answers := []string{ticket + proposal("mt-1"), ticket + proposal("mt-1"), ticket + proposal("mt-2"),
		ticket + `"status":"matched","assignment":{"match_id":"mt-2","team":0,"teams":[{"players":["a"]},{"players":["b"]}]}}`}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answers[min(int(calls.Add(1))-1, len(answers)-1)]))
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	var handed []string
	tk, err := client.WaitForMatch(t.Context(), c, "tk-1", func(tk *client.Ticket) {
		handed = append(handed, string(tk.Status)+" "+tk.Proposal.MatchId)
	})
	if err != nil || tk.Assignment == nil || tk.Assignment.MatchId != "mt-2" {
		t.Fatalf("WaitForMatch: %+v, %v", tk, err)
	}
	if got := strings.Join(handed, ", "); got != "proposed mt-1, proposed mt-2" {
		t.Fatalf("onChange was handed %q, want each proposal once: proposed mt-1, proposed mt-2", got)
	}
}

// In a queue with a ready check, WaitForMatch hands the proposed ticket to onChange, where
// the backend asks its player; once both accepted it returns the matched ticket.
func TestWaitForMatchThroughAReadyCheck(t *testing.T) {
	t.Parallel()
	c, err := client.New(queueService(t), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if resp, err := c.PutQueueWithResponse(ctx, "ready", client.QueueDefinition{
		Context: client.Context{GameType: "ctf"}, TeamSize: new(int32(1)), TickMs: new(int32(50)),
		Acceptance: &client.Acceptance{TimeoutS: 10}}); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("queue: %v %v", err, resp)
	}
	players := []string{"alice", "bob"}
	ids := make([]string, len(players))
	for i, p := range players {
		resp, err := c.CreateTicketWithResponse(ctx, "ready", &client.CreateTicketParams{},
			client.TicketRequest{Players: []client.TicketRequestPlayer{{Id: p, Rating: new(1000.0)}}})
		if err != nil || resp.JSON201 == nil {
			t.Fatalf("ticket %s: %v %v", p, err, resp)
		}
		ids[i] = resp.JSON201.Id
	}
	type outcome struct {
		tk       *client.Ticket
		err      error
		proposed bool
	}
	done := make(chan outcome, len(players))
	for i, p := range players {
		go func() {
			var proposed bool
			tk, err := client.WaitForMatch(ctx, c, ids[i], func(tk *client.Ticket) {
				if tk.Status == client.TicketStatusProposed && tk.Proposal != nil {
					proposed = true
					c.AnswerProposalWithResponse(ctx, tk.Proposal.MatchId, client.AcceptanceRequest{PlayerId: p, Accept: true})
				}
			})
			done <- outcome{tk, err, proposed}
		}()
	}
	for range players {
		o := <-done
		if o.err != nil || o.tk.Status != client.TicketStatusMatched || !o.proposed {
			t.Fatalf("WaitForMatch: %+v, %v (proposed seen: %v)", o.tk, o.err, o.proposed)
		}
	}
}
