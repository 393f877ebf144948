package handlers

import (
	"net/http"
	"testing"
	"time"
)

// A party of two and two solos 12 points above it in a 2v2 queue without a team_balance
// rule: the one match they make is within every ticket's interval but its teams are 12 apart
// on average, over the default balance (a tenth of the interval, 2.5 at first), so each
// ticket says over HTTP that it waits on the teams, with both figures, and the queue's stats
// count the three under teams. Every answer is checked against the spec.
func TestATicketSaysItWaitsOnTheTeamsBalance(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	if resp := exchange(t, h, http.MethodPut, "/v1/queues/duo", "application/json",
		`{"context":{"game_type":"ctf"},"team_size":2,"max_party_size":2,"tick_ms":50}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, readAll(t, resp))
	}
	var party ticketJSON
	for i, body := range []string{
		`{"players":[{"id":"alice","rating":1000},{"id":"bob","rating":1000}]}`,
		`{"players":[{"id":"carol","rating":1012}]}`,
		`{"players":[{"id":"dave","rating":1012}]}`,
	} {
		var tk ticketJSON
		resp := exchange(t, h, http.MethodPost, "/v1/queues/duo/tickets", "application/json", body)
		if decodeJSON(t, resp, &tk); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", body, resp.StatusCode)
		}
		if i == 0 {
			party = tk
		}
	}
	// A pass that ran before the last ticket arrived left the party waiting on the interval
	// (too few players), and a reason stays until the next pass: wait for the pass that saw
	// all three, the only one that can name the teams. Within 10 s the interval (and with it
	// the balance) has not widened: the reason is then the one below.
	var got ticketJSON
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = ticketJSON{}
		decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+party.ID, "", ""), &got)
		if got.Status != "searching" || got.WaitingOn != nil && got.WaitingOn.Rule == "teams" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the party does not say it waits on the teams: %s, waiting on %+v", got.Status, got.WaitingOn)
		}
		time.Sleep(20 * time.Millisecond) // the leader's next pass; it runs on the real clock here
	}
	const want = "the most even teams of the 2 candidates differ by 12 in average rating, over the 2.5 the wait allows"
	if got.Status != "searching" || got.WaitingOn == nil || got.WaitingOn.Rule != "teams" || got.WaitingOn.Detail != want {
		t.Fatalf("the party: %s, waiting on %+v, want teams: %q", got.Status, got.WaitingOn, want)
	}
	// The leader rebuilds its stats at most every second, from its last pass: stats built
	// from a pass before the last ticket arrived count fewer tickets under another rule.
	var st queueStatsJSON
	for {
		st = queueStatsJSON{}
		decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/queues/duo/stats", "", ""), &st)
		if st.WaitingOn["teams"] == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.WaitingOn["teams"] != 3 || len(st.WaitingOn) != 1 {
		t.Fatalf("stats waiting on %v, want teams: 3", st.WaitingOn)
	}
}
