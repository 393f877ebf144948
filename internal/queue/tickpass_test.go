package queue_test

import (
	"testing"
	"time"

	"matchmaker/internal/queue"
	"matchmaker/internal/queue/queuetest"
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
