package queue_test

import (
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

func lowPriority(p queue.Player) queue.Player { p.LowPriority = true; return p }

// matchedIDs are the players of each match of w, sorted within each match.
func matchedIDs(w queue.TickWrite) [][]string {
	var out [][]string
	for _, m := range w.Matches {
		var ids []string
		for _, t := range m.Teams {
			for _, p := range t.Players {
				ids = append(ids, p.ID)
			}
		}
		slices.Sort(ids)
		out = append(out, ids)
	}
	return out
}

// The low-priority pool in both passes: a low-priority ticket is matched with other
// low-priority tickets only until it has waited extra_wait_s, with anyone after; a normal
// ticket that has waited long does not take a low-priority one that has not. The match's
// low-priority players are marked, and its attributes hold nothing of the pool.
func TestTickPassLowPriorityPool(t *testing.T) {
	t.Parallel()
	t0 := queuetest.T0
	for _, teams := range []int{2, 3} { // the two-team pass, the shaped one
		q := queue.DefaultQueue("q")
		q.TeamSize, q.MaxPartySize, q.Teams = 1, 1, teams
		q.Penalties.LowPriority = &queue.LowPriorityPenalty{Leaves: 2, Window: time.Hour, Games: 3, ExtraWait: 60 * time.Second}
		normal := func(id string, s int) queue.Ticket {
			return searching(id, t0.Add(time.Duration(s)*time.Second), nil, pl(id, 1000))
		}
		low := func(id string, s int) queue.Ticket {
			return searching(id, t0.Add(time.Duration(s)*time.Second), nil, lowPriority(pl(id, 1000)))
		}
		// The normal tickets are the oldest (they have waited past extra_wait_s); the
		// low-priority ones are young.
		var waiting []queue.Ticket
		for i := range teams {
			waiting = append(waiting, normal("n"+string(rune('a'+i)), 0))
		}
		for i := range teams {
			waiting = append(waiting, low("l"+string(rune('a'+i)), 100))
		}
		w, err := queue.TickPass{}.Match(q, waiting, t0.Add(110*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, ids := range matchedIDs(w) {
			lows := 0
			for _, id := range ids {
				if id[0] == 'l' {
					lows++
				}
			}
			if lows != 0 && lows != len(ids) {
				t.Fatalf("%d teams: a match of young low-priority and normal tickets: %v", teams, ids)
			}
		}
		if len(w.Matches) != 2 {
			t.Fatalf("%d teams: %d matches (%v), want the normal ones' and the low-priority ones'", teams, len(w.Matches), matchedIDs(w))
		}
		for _, m := range w.Matches {
			if len(m.Attributes) != 0 {
				t.Fatalf("%d teams: the match's attributes %+v", teams, m.Attributes)
			}
			for _, tm := range m.Teams {
				for _, p := range tm.Players {
					if p.LowPriority != (p.ID[0] == 'l') {
						t.Fatalf("%d teams: player %s marked low priority %v", teams, p.ID, p.LowPriority)
					}
				}
			}
		}
		// One young low-priority ticket among normal ones waits, saying why; once it has
		// waited extra_wait_s it is matched with them.
		mixed := append(slices.Clone(waiting[:teams-1]), low("late", 100))
		w, err = queue.TickPass{}.Match(q, mixed, t0.Add(159*time.Second))
		if err != nil || len(w.Matches) != 0 {
			t.Fatalf("%d teams at 59 s of waiting: %v %v", teams, matchedIDs(w), err)
		}
		if n := w.Waiting.ByRule()[queue.WaitLowPriority]; n == 0 {
			t.Fatalf("%d teams: no ticket waits on the low-priority pool: %v", teams, w.Waiting.ByRule())
		}
		w, err = queue.TickPass{}.Match(q, mixed, t0.Add(160*time.Second))
		if err != nil || len(w.Matches) != 1 {
			t.Fatalf("%d teams at 60 s of waiting: %v %v", teams, matchedIDs(w), err)
		}
	}
}

// A match function's proposals are held to the low-priority pool as the pass's matches are:
// a low-priority ticket with a normal one is rejected (low_priority, naming them) until it
// has waited extra_wait_s, however long the normal one waited; two low-priority tickets are
// made at once; without the penalty the mix is made.
func TestFunctionProposalsKeepTheLowPriorityPool(t *testing.T) {
	t.Parallel()
	t0 := queuetest.T0
	pool := []queue.Ticket{
		searching("lo", t0, nil, lowPriority(pl("lo", 1000))),
		searching("lu", t0, nil, lowPriority(pl("lu", 1000))),
		searching("old", t0.Add(-time.Hour), nil, pl("old", 1000)),
	}
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 1, 1
	q.Penalties.LowPriority = &queue.LowPriorityPenalty{Leaves: 2, Window: time.Hour, Games: 3, ExtraWait: 60 * time.Second}
	check := &queue.FunctionCheck{Queue: &q, Pool: pool, Now: t0.Add(59 * time.Second)}
	mixed := []queue.ProposedMatch{{Teams: [][]string{{"lo"}, {"old"}}}}
	made, rejected := check.Check(mixed)
	want := `ticket "lo" is low priority and has waited 59 s of the pool's extra_wait_s 60: normal ticket "old" may not meet it yet`
	if len(made) != 0 || len(rejected) != 1 || rejected[0].Reason != queue.RejectLowPriority || rejected[0].Detail != want {
		t.Fatalf("before the extra wait, a low-priority ticket with a normal one: made %v, rejected %+v", made, rejected)
	}
	if made, rejected = check.Check([]queue.ProposedMatch{{Teams: [][]string{{"lo"}, {"lu"}}}}); len(made) != 1 {
		t.Fatalf("two low-priority tickets: made %v, rejected %+v", made, rejected)
	}
	check.Now = t0.Add(60 * time.Second)
	if made, rejected = check.Check(mixed); len(made) != 1 {
		t.Fatalf("after the extra wait: made %v, rejected %+v", made, rejected)
	}
	check.Now, q.Penalties.LowPriority = t0.Add(time.Second), nil
	if made, rejected = check.Check(mixed); len(made) != 1 {
		t.Fatalf("a queue without the penalty: made %v, rejected %+v", made, rejected)
	}
}
