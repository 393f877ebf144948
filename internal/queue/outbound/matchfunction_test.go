package outbound_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/outbound"
)

const functionSecret = "0123456789abcdef-mmf"

// functionCall is one call of a two-ticket pool, its deadline a second after its time.
func functionCall() (queue.FunctionRequest, time.Time) {
	q := queue.DefaultQueue("duel")
	q.TeamSize = 1
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	pool := []queue.Ticket{
		{ID: "tk-a", Queue: "duel", Players: []queue.Player{{ID: "alice", Rating: 25}}, CreatedAt: now.Add(-3 * time.Second)},
		{ID: "tk-b", Queue: "duel", Players: []queue.Player{{ID: "bob", Rating: 26}}, CreatedAt: now.Add(-2 * time.Second)},
	}
	return queue.FunctionRequest{Queue: &q, Tick: 7, Now: now, Deadline: now.Add(time.Second), Pool: pool}, now
}

var loopback = queue.WebhookPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

// A call is signed as a webhook delivery is (the Go client's VerifyWebhook accepts it), its
// delivery id the queue's tick, its deadline in a header and in the body; the answer's
// matches come back as proposed.
func TestCallFunctionSignedWithTheDeadline(t *testing.T) {
	t.Parallel()
	r, now := functionCall()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := client.VerifyWebhook(functionSecret, req.Header, body, now, time.Minute); err != nil {
			t.Errorf("the signature: %v", err)
		}
		if got := req.Header.Get(queue.DeliveryHeader); got != "duel:tick:7" {
			t.Errorf("delivery %q", got)
		}
		if got := req.Header.Get(queue.DeadlineHeader); got != "2026-12-02T01:00:01Z" || !strings.Contains(string(body), `"deadline":"2026-12-02T01:00:01Z"`) {
			t.Errorf("deadline header %q, body %s", got, body)
		}
		if !strings.Contains(string(body), `"pool":[{"id":"tk-a"`) {
			t.Errorf("the pool, oldest first: %s", body)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"matches":[{"teams":[{"tickets":["tk-a"]},{"tickets":["tk-b"]}]}]}`)
	}))
	defer srv.Close()
	f := queue.MatchFunction{URL: srv.URL, Secret: functionSecret, Timeout: time.Second}
	got, err := outbound.New(loopback, time.Second).CallFunction(context.Background(), f, r)
	if err != nil || len(got) != 1 || len(got[0].Teams) != 2 || got[0].Teams[1][0] != "tk-b" {
		t.Fatalf("proposals %+v, %v", got, err)
	}
}

// A call that fails says how: refused (not a 2xx), unreadable (not JSON, not the protocol's,
// over 16 MiB), timed out (its context's deadline, however long the answer would take), or
// not made at all (an address the policy refuses).
func TestCallFunctionFailures(t *testing.T) {
	t.Parallel()
	r, _ := functionCall()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) }) // after the parallel subtests
	cases := []struct {
		name    string
		handler http.HandlerFunc
		check   func(error) bool
	}{
		{"refused", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusBadGateway) },
			func(err error) bool { var re *queue.RefusedError; return errors.As(err, &re) && re.Status == 502 }},
		{"not JSON", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>") },
			func(err error) bool { return errors.Is(err, queue.ErrFunctionUnreadable) }},
		{"wrong shape", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"matches":[{"teams":"tk-a"}]}`)
		},
			func(err error) bool { return errors.Is(err, queue.ErrFunctionUnreadable) }},
		{"too large", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"matches":[`+strings.Repeat(" ", queue.MaxFunctionAnswer)+`]}`)
		}, func(err error) bool {
			return errors.Is(err, queue.ErrFunctionUnreadable) && strings.Contains(err.Error(), "over")
		}},
		{"too slow", func(w http.ResponseWriter, req *http.Request) {
			_, _ = io.Copy(io.Discard, req.Body) // the server notices a closed connection once the body is read
			select {
			case <-stop:
			case <-req.Context().Done():
			}
		}, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			timeout := 10 * time.Second // writing 16 MiB takes a while under -race
			if tc.name == "too slow" {
				timeout = 200 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			f := queue.MatchFunction{URL: srv.URL, Secret: functionSecret, Timeout: timeout}
			got, err := outbound.New(loopback, time.Second).CallFunction(ctx, f, r)
			if got != nil || !tc.check(err) {
				t.Fatalf("%+v, %v", got, err)
			}
		})
	}
	t.Run("refused address", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("reached") }))
		defer srv.Close()
		f := queue.MatchFunction{URL: srv.URL, Secret: functionSecret, Timeout: time.Second}
		if _, err := outbound.New(queue.WebhookPolicy{}, time.Second).CallFunction(context.Background(), f, r); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Fatalf("%v, want the loopback refusal", err)
		}
	})
}
