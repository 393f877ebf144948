package queue_test

import (
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// A party of two and two solos 12 points above it in a 2v2 queue without a team_balance
// rule: each is within the others' interval (25), but the only teams they make (the party
// against the solos) are 12 apart on average, over the default balance (a tenth of the
// anchor's interval). Every ticket waits on "teams", the detail naming both figures, until
// the wait has widened the interval to 150 (a bound of 15): then they are matched, the
// party on one team and the solos on the other.
func TestTicketsWaitOnTheTeamsBalanceUntilTheWaitAllowsIt(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q") // interval 25, 50 after 10 s, 150 after 30 s
	q.TeamSize, q.MaxPartySize = 2, 2
	t0 := queuetest.T0
	waiting := []queue.Ticket{
		searching("party", t0, nil, pl("alice", 1000), pl("bob", 1000)),
		searching("carol", t0.Add(time.Second), nil, pl("carol", 1012)),
		searching("dave", t0.Add(2*time.Second), nil, pl("dave", 1012)),
	}
	for _, tt := range []struct {
		at     time.Duration
		detail string // "" when matched
	}{
		{5 * time.Second, "the most even teams of the 2 candidates differ by 12 in average rating, over the 2.5 the wait allows"},
		{12 * time.Second, "the most even teams of the 2 candidates differ by 12 in average rating, over the 5 the wait allows"},
		{30 * time.Second, ""},
	} {
		w, err := queue.TickPass{}.Match(q, waiting, t0.Add(tt.at))
		if err != nil {
			t.Fatal(err)
		}
		if tt.detail != "" {
			if len(w.Matches) != 0 {
				t.Fatalf("at %v: matched %v, over the balance", tt.at, w.Matches[0].Tickets())
			}
			for _, id := range []string{"party", "carol", "dave"} {
				// The solos anchor too: their one match is the same, and as uneven.
				got, ok := w.Waiting.Of(id)
				if !ok || got.Rule != "teams" {
					t.Fatalf("at %v: %s waits on %+v (%v), want teams", tt.at, id, got, ok)
				}
				if id == "party" && got.Detail != tt.detail {
					t.Fatalf("at %v: the party waits on %q, want %q", tt.at, got.Detail, tt.detail)
				}
			}
			continue
		}
		if len(w.Matches) != 1 {
			t.Fatalf("at %v: %d matches, want 1 within the widened balance (waiting %+v)", tt.at, len(w.Matches), w.Waiting)
		}
		a := queue.Assignments(w.Matches[0])
		if a["alice"].Team != a["bob"].Team || a["carol"].Team != a["dave"].Team || a["alice"].Team == a["carol"].Team {
			t.Fatalf("teams: %+v", a)
		}
		if ids := w.Matches[0].Tickets(); !slices.Contains(ids, "party") || len(ids) != 3 {
			t.Fatalf("match of %v", ids)
		}
	}
}
