package queue_test

import (
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

func searching(id string, at time.Time, lat map[string]float64, players ...queue.Player) queue.Ticket {
	return queue.Ticket{ID: id, Queue: "q", Status: queue.Searching, Players: players, Latencies: lat,
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), UpdatedAt: at}
}

func pl(id string, r float64) queue.Player {
	return queue.Player{ID: id, Rating: r, Source: queue.RatingInline}
}

// The production pass plays a match in a region every ticket accepts at its current limit,
// and expires at once (reason no_region) a ticket whose every region is beyond the widest
// limit.
func TestTickPassRegions(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize, q.Regions = 1, 1, []string{"eu", "us"}
	q.Expansions.MaxLatencyMS = []queue.Step{{AfterS: 0, Value: 60}, {AfterS: 20, Value: 120}}
	t0 := queuetest.T0
	waiting := []queue.Ticket{
		searching("a", t0, map[string]float64{"eu": 40, "us": 100}, pl("a", 1000)),
		searching("b", t0.Add(time.Second), map[string]float64{"eu": 90, "us": 30}, pl("b", 1000)),
		searching("far", t0.Add(2*time.Second), map[string]float64{"eu": 121, "us": 500}, pl("far", 1000)),
	}
	// At 5 s both limits are 60: no region fits a and b together.
	w, err := queue.TickPass{}.Match(q, waiting, t0.Add(5*time.Second))
	if err != nil || len(w.Matches) != 0 || len(w.Expired) != 1 || w.Expired[0] != (queue.Expiry{TicketID: "far", Reason: "no_region"}) {
		t.Fatalf("at 5 s: %+v %v", w, err)
	}
	// At 25 s both limits are 120: eu (worst latency 90) beats us (worst 100).
	w, err = queue.TickPass{}.Match(q, waiting[:2], t0.Add(25*time.Second))
	if err != nil || len(w.Matches) != 1 || w.Matches[0].Region != "eu" || len(w.Expired) != 0 {
		t.Fatalf("at 25 s: %+v %v", w, err)
	}
	if a := queue.Assignments(w.Matches[0]); a["a"].Region != "eu" || a["b"].Region != "eu" {
		t.Fatalf("assignments %+v", a)
	}
}

// The production pass expires a ticket past its expiry in a queue of any team shape, as in a
// two-team one (the shaped pass once dropped them: they stayed searching for ever).
func TestTickPassExpiresShapedTickets(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize, q.Teams = 1, 1, 3
	t0 := queuetest.T0
	gone := searching("gone", t0, nil, pl("g", 1000))
	gone.ExpiresAt = t0.Add(3 * time.Second)
	waiting := []queue.Ticket{gone, searching("a", t0.Add(time.Second), nil, pl("a", 1000)),
		searching("b", t0.Add(2*time.Second), nil, pl("b", 1000))}
	w, err := queue.TickPass{}.Match(q, waiting, t0.Add(5*time.Second))
	if err != nil || len(w.Matches) != 0 || len(w.Expired) != 1 || w.Expired[0] != (queue.Expiry{TicketID: "gone", Reason: "ttl"}) {
		t.Fatalf("%+v %v", w, err)
	}
}

// The production pass serves a backfill first: the joiner nearest the match's rating goes to
// the team with the open slot, the fill carries the running match's id, and each ticket's
// assignment lists who joined; a backfill the queue no longer admits expires as invalid.
func TestTickPassBackfill(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 2, 2
	t0 := queuetest.T0
	bf := searching("bf", t0, nil, pl("r1", 1000), pl("b1", 1010), pl("b2", 990))
	bf.Backfill = &queue.Backfill{MatchID: "running", OpenSlots: []int{1, 0},
		Teams: []queue.BackfillTeam{{Players: []string{"r1"}}, {Players: []string{"b1", "b2"}}}}
	old := searching("old", t0.Add(-time.Minute), nil, pl("o1", 1000)) // oldest, but the backfill is served first
	near := searching("near", t0.Add(time.Second), nil, pl("n1", 1001))
	party := searching("party", t0.Add(time.Second), nil, pl("p1", 1000), pl("p2", 1000)) // too large for one slot
	w, err := queue.TickPass{}.Match(q, []queue.Ticket{old, bf, near, party}, t0.Add(2*time.Second))
	if err != nil || len(w.Matches) != 1 {
		t.Fatalf("%+v %v", w, err)
	}
	m := w.Matches[0]
	if m.BackfillOf != "running" || m.BackfillTicket != "bf" || len(m.Teams[0].Players) != 2 || len(m.Teams[1].Players) != 2 {
		t.Fatalf("fill %+v", m)
	}
	// old (1000) and near (1001) are both within 25 of 1000 (the match's mean): old is
	// nearer.
	a := queue.Assignments(m)
	if got := a["old"]; got.MatchID != "running" || got.Team != 0 || len(got.Joined) != 2 || got.Joined[0][0] != "o1" {
		t.Fatalf("joiner's assignment %+v", got)
	}
	if got := a["bf"]; got.MatchID != "running" || got.Joined[0][0] != "o1" || len(got.Joined[1]) != 0 {
		t.Fatalf("backfill's assignment %+v", got)
	}
	// A queue whose team size shrank below the match's players expires the backfill.
	q.TeamSize, q.MaxPartySize = 1, 1
	w, err = queue.TickPass{}.Match(q, []queue.Ticket{bf, near}, t0.Add(2*time.Second))
	if err != nil || len(w.Matches) != 0 || len(w.Expired) != 1 || w.Expired[0] != (queue.Expiry{TicketID: "bf", Reason: queue.ReasonInvalid}) {
		t.Fatalf("%+v %v", w, err)
	}
}
