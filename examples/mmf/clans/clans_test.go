package clans_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/examples/mmf/clans"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// clanQueue is a queue of teams of size, whose tickets may name their clan.
func clanQueue(teams, size int) queue.Queue {
	q := queue.DefaultQueue("clans")
	q.Teams, q.TeamSize, q.MaxPartySize = teams, size, size
	q.Attributes = map[string]matchrules.Attribute{clans.Attribute: {Type: matchrules.TypeString}}
	return q
}

// propose sends pool to clans.Match as the service does (its encoder's JSON, read into the
// client's types) and reads the answer as the service does (its strict reader).
func propose(t *testing.T, q *queue.Queue, pool []queue.Ticket) []queue.ProposedMatch {
	t.Helper()
	body := queue.AppendFunctionRequest(nil, queue.FunctionRequest{Queue: q, Now: now, Deadline: now.Add(time.Second), Pool: pool})
	var req client.MatchFunctionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	matches, err := clans.Match(context.Background(), &req)
	if err != nil {
		t.Fatal(err)
	}
	if matches == nil {
		matches = []client.ProposedMatch{}
	}
	answer, err := json.Marshal(client.MatchFunctionAnswer{Matches: matches})
	if err != nil {
		t.Fatal(err)
	}
	got, err := queue.DecodeFunctionAnswer(answer, len(pool))
	if err != nil {
		t.Fatalf("the service cannot read the answer: %v\n%s", err, answer)
	}
	return got
}

func currentInterval(steps []queue.Step, wait float64) float64 {
	v := steps[0].Value
	for _, s := range steps {
		if s.AfterS <= wait {
			v = s.Value
		}
	}
	return v
}

func mean(t *queue.Ticket) float64 {
	sum := 0.0
	for _, p := range t.Players {
		sum += p.Rating
	}
	return sum / float64(len(t.Players))
}

func ticket(id, clan string, wait int, ratings ...float64) queue.Ticket {
	t := queue.Ticket{ID: id, Queue: "clans", Status: queue.Searching, CreatedAt: now.Add(-time.Duration(wait) * time.Second)}
	if clan != "" {
		t.Attributes = map[string]matchrules.Value{clans.Attribute: matchrules.StringValue(clan)}
	}
	for i, r := range ratings {
		t.Players = append(t.Players, queue.Player{ID: fmt.Sprintf("%s-%d", id, i), Rating: r})
	}
	return t
}

// The README's pool: three wolves queued alone and two ravens as a party, among solo
// players, in a 3v3; the wolves end on one team, the ravens on one.
func TestClansPlayOnOneTeam(t *testing.T) {
	t.Parallel()
	q := clanQueue(2, 3)
	pool := []queue.Ticket{ticket("alice", "wolves", 60, 1000), ticket("dave+erin", "ravens", 55, 1010, 990), ticket("bob", "wolves", 50, 1001),
		ticket("frank", "", 40, 1005), ticket("carol", "wolves", 30, 995), ticket("grace", "", 20, 1015)}
	got := propose(t, &q, pool)
	want := fmt.Sprint([]queue.ProposedMatch{{Teams: [][]string{{"alice", "bob", "carol"}, {"dave+erin", "frank"}}}})
	if fmt.Sprint(got) != want {
		t.Fatalf("proposed %v, want %v", got, want)
	}
}

// Random pools (a few clans, parties, ratings spread over more than the widest interval, 2 to
// 4 teams):
// the service's check rejects no proposal, no clan plays on two teams of a match, every
// ticket of a match is within its oldest ticket's interval of it; and a pool of solo players
// without clans, within one interval, is matched whole but for the remainder.
func TestClansProposalsPassTheServicesCheck(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(33, 7))
	proposed := 0
	for round := range 300 {
		q := clanQueue(2+rng.IntN(3), 1+rng.IntN(5))
		n := rng.IntN(60)
		pool := make([]queue.Ticket, n)
		clanOf := map[string]string{}
		for i := range pool {
			clan := ""
			if rng.IntN(2) == 0 {
				clan = fmt.Sprintf("c%d", rng.IntN(4))
			}
			ratings := make([]float64, 1+rng.IntN(min(q.TeamSize, 2)))
			for j := range ratings {
				ratings[j] = 800 + rng.Float64()*400
			}
			pool[i] = ticket(fmt.Sprintf("t%d", i), clan, (n-i)/2, ratings...)
			clanOf[pool[i].ID] = clan
		}
		got := propose(t, &q, pool)
		proposed += len(got)
		check := queue.FunctionCheck{Queue: &q, Pool: pool, Now: now}
		made, rejected := check.Check(got)
		if len(rejected) > 0 || len(made) != len(got) {
			t.Fatalf("round %d: %d made, rejected %+v", round, len(made), rejected)
		}
		byID, at := map[string]*queue.Ticket{}, map[string]int{}
		for i := range pool {
			byID[pool[i].ID], at[pool[i].ID] = &pool[i], i
		}
		for _, m := range got {
			oldest := byID[m.Teams[0][0]] // the first in the pool of the oldest
			for _, tm := range m.Teams {
				for _, id := range tm {
					if at[id] < at[oldest.ID] {
						oldest = byID[id]
					}
				}
			}
			interval := currentInterval(q.Expansions.Interval, now.Sub(oldest.CreatedAt).Seconds())
			for _, tm := range m.Teams {
				for _, id := range tm {
					if d := math.Abs(mean(byID[id]) - mean(oldest)); d > interval {
						t.Fatalf("round %d: ticket %s is %.1f from the match's oldest, over its interval %v", round, id, d, interval)
					}
				}
			}
			side := map[string]int{}
			for k, tm := range m.Teams {
				for _, id := range tm {
					c := clanOf[id]
					if s, ok := side[c]; ok && c != "" && s != k {
						t.Fatalf("round %d: clan %s on teams %d and %d of %v", round, c, s, k, m.Teams)
					}
					side[c] = k
				}
			}
		}
	}
	if proposed < 300 {
		t.Errorf("%d matches proposed in 300 pools: the pools test little", proposed)
	}
	for size := 1; size <= 5; size++ {
		q := clanQueue(2, size)
		var pool []queue.Ticket
		for i := range 23 {
			pool = append(pool, ticket(fmt.Sprintf("s%d", i), "", 100-i, 1000+float64(i)))
		}
		if got := propose(t, &q, pool); len(got) != 23/(2*size) {
			t.Errorf("team size %d: %d matches of 23 solo players, want %d", size, len(got), 23/(2*size))
		}
	}
}

// benchPool is a 5,000-ticket pool of a 5v5 queue as the service sends it: a fifth of the
// tickets parties of two, half of them in one of 500 clans, ratings spread over 400.
func benchPool() (queue.Queue, []queue.Ticket) {
	q := clanQueue(2, 5)
	rng := rand.New(rand.NewPCG(5000, 1))
	pool := make([]queue.Ticket, 5000)
	for i := range pool {
		clan := ""
		if rng.IntN(2) == 0 {
			clan = fmt.Sprintf("clan%03d", rng.IntN(500))
		}
		ratings := []float64{800 + rng.Float64()*400}
		if rng.IntN(5) == 0 {
			ratings = append(ratings, 800+rng.Float64()*400)
		}
		pool[i] = ticket(fmt.Sprintf("t%d", i), clan, 60-i/100, ratings...)
	}
	return q, pool
}

// BenchmarkMatch is the function's own compute on a 5,000-ticket pool, the request decoded
// beforehand: what a leader's tick waits for beyond the network and the JSON.
func BenchmarkMatch(b *testing.B) {
	q, pool := benchPool()
	body := queue.AppendFunctionRequest(nil, queue.FunctionRequest{Queue: &q, Now: now, Deadline: now.Add(time.Second), Pool: pool})
	var req client.MatchFunctionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		b.Fatal(err)
	}
	matches := 0
	for b.Loop() {
		out, _ := clans.Match(context.Background(), &req)
		matches = len(out)
	}
	b.ReportMetric(float64(matches), "matches")
}

// BenchmarkHandler is a whole call on loopback's far side: the signed request of 5,000
// tickets verified, decoded into the client's types, matched and the answer written.
func BenchmarkHandler(b *testing.B) {
	q, pool := benchPool()
	call := queue.FunctionRequest{Queue: &q, Tick: 1, Now: now, Deadline: now.Add(time.Hour), Pool: pool}
	body := queue.AppendFunctionRequest(nil, call)
	const secret = "a-benchmark-secret-16"
	h := &client.MatchFunctionServer{Secret: secret, Func: clans.Match, Now: func() time.Time { return now }}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set(queue.SignatureHeader, queue.Sign(secret, now.Unix(), call.Delivery(), body))
		req.Header.Set(queue.DeliveryHeader, call.Delivery())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
