package handlers

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// tickServer is a server with auth off whose queue service runs the production pass.
func tickServer(t *testing.T) http.Handler {
	t.Helper()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: queue.TickPass{},
		Config: queuesvc.Config{QueueRefresh: 20 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- qs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Off: true}})
}

const backfillBody = `{"match_id":"running-1","teams":[{"players":[{"id":"r1","rating":1000}],"bots":[950]},` +
	`{"players":[{"id":"b1","rating":1010},{"id":"b2","rating":990}]}],"open_slots":[1,0],"region":"eu",` +
	`"bots":{"mean_rating":950,"target_players":4,"recommended":{"min":2,"max":4}},"ttl_s":60}`

// A backfill ticket is created (201, with its request), a searching player joins it at the
// next tick on the team with the open slot, and both tickets' assignments carry the running
// match's id and who joined; the fill is readable as a match.
func TestBackfillFromCreationToFill(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	exchange(t, h, http.MethodPut, "/v1/queues/duo", "application/json",
		`{"context":{"game_type":"ctf"},"team_size":2,"tick_ms":50,"regions":["eu","us"]}`)
	resp := exchange(t, h, http.MethodPost, "/v1/queues/duo/backfill", "application/json", backfillBody, "Idempotency-Key", "bf-1")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, readAll(t, resp))
	}
	var bf ticketJSON
	decodeJSON(t, resp, &bf)
	if bf.Backfill == nil || bf.Backfill.MatchID != "running-1" || len(bf.Players) != 3 || bf.Backfill.Bots == nil ||
		bf.Backfill.Bots.Recommended.Max != 4 || bf.Backfill.Teams[0].Bots[0] != 950 {
		t.Fatalf("backfill ticket %+v", bf)
	}
	if again := exchange(t, h, http.MethodPost, "/v1/queues/duo/backfill", "application/json", backfillBody, "Idempotency-Key", "bf-1"); again.StatusCode != http.StatusOK {
		t.Fatalf("a replay: %d", again.StatusCode)
	}
	if busy := exchange(t, h, http.MethodPost, "/v1/queues/duo/tickets", "application/json", `{"players":[{"id":"b1"}]}`); busy.StatusCode != http.StatusConflict {
		t.Fatalf("a match's player searching: %d", busy.StatusCode)
	}
	var joiner ticketJSON
	decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/queues/duo/tickets", "application/json",
		`{"players":[{"id":"j1","rating":1005}],"latencies_ms":{"eu":20}}`), &joiner)
	var got ticketJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+joiner.ID+"?wait_s=5", "", ""), &got)
	a := got.Assignment
	if got.Status != queue.Matched || a == nil || a.MatchID != "running-1" || a.Team != 0 || len(a.Joined) != 2 ||
		len(a.Joined[0].Players) != 1 || a.Joined[0].Players[0] != "j1" || len(a.Joined[1].Players) != 0 || a.Region != "eu" {
		t.Fatalf("joiner %+v %+v", got, a)
	}
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+bf.ID, "", ""), &got)
	if got.Status != queue.Matched || got.Assignment.MatchID != "running-1" || got.Assignment.Joined[0].Players[0] != "j1" ||
		got.Assignment.FillID == "" || got.Assignment.FillID != a.FillID {
		t.Fatalf("backfill %+v %+v", got, got.Assignment)
	}
	var fill matchOutJSON
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/matches/"+a.FillID, "", ""), &fill)
	if fill.ID != a.FillID || fill.BackfillOf != "running-1" || fill.BackfillTicket != bf.ID {
		t.Fatalf("the fill read by its id: %+v", fill)
	}
}

func TestBadBackfillsNameTheField(t *testing.T) {
	t.Parallel()
	h, _ := queueServer(t)
	exchange(t, h, http.MethodPut, "/v1/queues/duo", "application/json",
		`{"context":{"game_type":"ctf"},"team_size":2,"regions":["eu","us"]}`)
	team := `[{"players":[{"id":"r1"}]},{"players":[{"id":"b1"}]}]`
	tests := []struct {
		body   string
		status int
		field  string
	}{
		{`{"teams":` + team + `,"open_slots":[1,1]}`, 400, "match_id"},
		{`{"match_id":"m","teams":[],"open_slots":[1,1]}`, 400, "teams"},
		{`{"match_id":"m","teams":` + team + `,"open_slots":[0,0]}`, 400, "open_slots"},
		{`{"match_id":"m","teams":` + team + `,"open_slots":[2,1]}`, 400, "open_slots[0]"},
		{`{"match_id":"m","teams":` + team + `,"open_slots":[1,-1]}`, 400, "open_slots[1]"},
		{`{"match_id":"m","teams":[{"players":[{"id":"r1","rating":-3}]},{"players":[]}],"open_slots":[1,1]}`, 400, "teams[0].players[0].rating"},
		{`{"match_id":"m","teams":[{"players":[{"id":"r1"}]},{"players":[{"id":"r1"}]}],"open_slots":[1,1]}`, 400, "teams[1].players[0].id"},
		{`{"match_id":"m","teams":` + team + `,"open_slots":[1,1],"region":"mars"}`, 400, "region"},
		{`{"match_id":"m","teams":` + team + `,"open_slots":[1,1],"bots":{"mean_rating":900}}`, 400, "bots.target_players"},
		{`{"match_id":"m","teams":` + team + `,"open_slots":[1,1],"ttl_s":0}`, 400, "ttl_s"},
		{`{"match_id":"m","teams":` + team + `,"open_slots":[1,1],"slots":1}`, 400, "slots"},
	}
	for _, tt := range tests {
		resp := exchange(t, h, http.MethodPost, "/v1/queues/duo/backfill", "application/json", tt.body)
		if resp.StatusCode != tt.status {
			t.Errorf("%s: %d, want %d", tt.body, resp.StatusCode, tt.status)
			continue
		}
		if p := readProblem(t, resp); !hasField(p, tt.field) {
			t.Errorf("%s: problem does not name %q: %+v", tt.body, tt.field, p.Errors)
		}
	}
	if resp := exchange(t, h, http.MethodPost, "/v1/queues/nope/backfill", "application/json",
		`{"match_id":"m","teams":`+team+`,"open_slots":[1,1]}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("no such queue: %d", resp.StatusCode)
	}
}

// FuzzBackfill sends arbitrary bodies to POST /v1/queues/{name}/backfill (with a Postgres-like
// rating store that fails on text it could not hold) and asserts that no answer is a 5xx and
// every 201 answers a valid backfill ticket.
func FuzzBackfill(f *testing.F) {
	f.Add(backfillBody)
	f.Add(`{"match_id":"m","teams":[{"players":[{"id":"a"}]},{"players":[]}],"open_slots":[1,2]}`)
	f.Add(`{"match_id":"m","teams":[{"players":[{"id":"a\u0000"}],"bots":[1e308]},{"players":[{"id":"a","rating":null}]}],"open_slots":[-1,9999999999]}`)
	f.Add(`{"match_id":"m","teams":[{"players":[{"id":"a"}]},{"players":[{"id":"b"}]}],"open_slots":[1,0],"bots":{"target_players":-1,"recommended":{"min":5,"max":2}},"ttl_s":1e9}`)
	f.Add(`{"match_id":"","teams":null,"open_slots":null,"region":"\xff"}`)
	rs := ratings.NewService(postgresLikeStore{ratings.NewMemoryStore(nil)}, ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: queue.TickPass{}})
	h := NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Off: true}})
	exchange(f, h, http.MethodPut, "/v1/queues/duo", "application/json",
		`{"context":{"game_type":"ctf"},"team_size":2,"regions":["eu","us"]}`)
	f.Fuzz(func(t *testing.T, body string) {
		resp := exchange(t, h, http.MethodPost, "/v1/queues/duo/backfill", "application/json", body)
		if resp.StatusCode >= 500 {
			t.Fatalf("status %d for %q", resp.StatusCode, body)
		}
		if resp.StatusCode == http.StatusCreated {
			var tk ticketJSON
			decodeJSON(t, resp, &tk)
			if tk.Backfill == nil || len(tk.Players) == 0 {
				t.Fatalf("created %+v for %q", tk, body)
			}
			// Free the players for the next input.
			exchange(t, h, http.MethodDelete, "/v1/tickets/"+tk.ID, "", "")
		}
	})
}

// GET /v1/queues/{name}/stats answers the leader's counters, per band, with the waits of the
// matches made; the tickets created afterwards carry an estimated wait.
func TestQueueStats(t *testing.T) {
	t.Parallel()
	h := tickServer(t)
	exchange(t, h, http.MethodPut, "/v1/queues/duel", "application/json", duelQueue)
	var a ticketJSON
	decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", `{"players":[{"id":"a","rating":1010}]}`), &a)
	// a waits alone first: c's estimate below exists only while c has waited less than the
	// longest recent wait, and one tick's wait is shorter than a creation on a loaded host.
	time.Sleep(500 * time.Millisecond)
	exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", `{"players":[{"id":"b","rating":1020}]}`)
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+a.ID+"?wait_s=5", "", ""), &a)
	if a.Status != queue.Matched {
		t.Fatalf("not matched: %+v", a)
	}
	var st queueStatsJSON
	deadline := time.Now().Add(5 * time.Second)
	for st.Matches.LastMinute == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // the snapshot is rebuilt every second
		decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/queues/duel/stats", "", ""), &st)
	}
	if st.Source != "leader" || st.Matches.LastMinute != 1 || st.Matches.LastHour != 1 || st.WaitS.Samples != 2 ||
		st.WaitS.Median == nil || len(st.Bands) != len(queue.Bands) || st.Bands[4].WaitS.Samples != 2 || st.QualitySamples != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The hour: the match in the last minute's entry, among the recent ones with its teams,
	// their averages and the model's prediction (no stored ratings: even).
	if n := len(st.MatchesPerMinute); n != 60 || st.MatchesPerMinute[59] != 1 {
		t.Fatalf("matches per minute %v", st.MatchesPerMinute)
	}
	if st.WaitSLastHour.Samples != 2 || st.WaitSLastHour.Median == nil || len(st.ExpiredByReason) != 0 {
		t.Fatalf("the hour: %+v, %v", st.WaitSLastHour, st.ExpiredByReason)
	}
	if len(st.RecentMatches) != 1 {
		t.Fatalf("recent matches %+v", st.RecentMatches)
	}
	m := st.RecentMatches[0]
	if m.ID != a.Assignment.MatchID || len(m.Teams) != 2 || m.Teams[0].AverageRating+m.Teams[1].AverageRating != 2030 ||
		m.AverageDifference != 10 || len(m.WinProbability) != 2 || math.Abs(m.WinProbability[0]-0.5) > 1e-9 {
		t.Fatalf("recent match %+v", m)
	}
	// An expiry is counted by its reason.
	var x ticketJSON
	decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", `{"players":[{"id":"x","rating":100}],"ttl_s":1}`), &x)
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+x.ID+"?wait_s=10", "", ""), &x)
	if x.Status != queue.Expired {
		t.Fatalf("not expired: %+v", x)
	}
	deadline = time.Now().Add(5 * time.Second)
	for st.ExpiredByReason["ttl"] == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // the snapshot is rebuilt every second
		decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/queues/duel/stats", "", ""), &st)
	}
	if st.ExpiredByReason["ttl"] != 1 || len(st.ExpiredByReason) != 1 {
		t.Fatalf("expired by reason %v", st.ExpiredByReason)
	}

	var c ticketJSON
	decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/queues/duel/tickets", "application/json", `{"players":[{"id":"c","rating":1030}]}`), &c)
	if c.EstimatedWaitS == nil {
		t.Fatalf("no estimate: %+v", c)
	}
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/tickets/"+c.ID, "", ""), &c)
	if c.EstimatedWaitS == nil {
		t.Fatalf("no estimate on GET: %+v", c)
	}
	// Its tolerances now: the default schedule's first interval, no latency limit, no rules.
	if tol := c.Tolerances; c.Status != queue.Searching || tol == nil || tol.Interval != 25 || tol.MaxLatencyMS != nil || tol.Rules != nil {
		t.Fatalf("tolerances of %+v: %+v", c, c.Tolerances)
	}
	for path, status := range map[string]int{"/v1/queues/nope/stats": 404, "/v1/queues/a%20b/stats": 400} {
		if resp := exchange(t, h, http.MethodGet, path, "", ""); resp.StatusCode != status {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, status)
		}
	}
}
