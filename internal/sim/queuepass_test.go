package sim

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// TestQueuePassMapsThePass is tick's ExampleRun through the adapter: a 2v2 queue at 100 s,
// a party of two (players 10, 11) and three solos (12, 13, 14), one solo (15) past its time to
// live. The party anchors; the match comes back as population indices, each team in the
// order of the pass's pairs, and the expired ticket as its index in waiting.
func TestQueuePassMapsThePass(t *testing.T) {
	t.Parallel()
	at := func(s float64) time.Duration { return seconds(s) }
	waiting := []Ticket{
		{ID: 0, Players: []int{15}, Ratings: []float64{1000}, Created: at(40)},          // waited 60 s: expired
		{ID: 1, Players: []int{10, 11}, Ratings: []float64{1010, 990}, Created: at(80)}, // 20 s: 50
		{ID: 2, Players: []int{13}, Ratings: []float64{1030}, Created: at(85)},          // 15 s: 50
		{ID: 3, Players: []int{14}, Ratings: []float64{980}, Created: at(90)},           // 10 s: 50
		{ID: 4, Players: []int{12}, Ratings: []float64{1040}, Created: at(95)},          // 5 s: 25, 40 away
	}
	m, err := NewQueuePass(2, matchrules.RatingWindow, []Step{{AfterS: 0, Value: 25}, {AfterS: 10, Value: 50}}, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	matches, expired := m.Tick(waiting, at(100))
	// The pass pairs 990 (11) with 980 (14) and 1010 (10) with 1030 (13).
	want := []Match{{Teams: [2][]int{{11, 10}, {14, 13}}}}
	if !reflect.DeepEqual(matches, want) || !slices.Equal(expired, []int{0}) {
		t.Errorf("matches %v, expired %v; want %v and [0]", matches, expired, want)
	}
	// A second before, the first ticket has 1 s to live and is the oldest: it anchors (1000,
	// interval 50), but every match it has holds the party (mean 1000) and is at least 10
	// apart on average, over the balance of a tenth of its interval, so it waits. The party
	// anchors next (interval 50) and takes 980 and 1030: 5 apart on average, within.
	matches, expired = m.Tick(waiting, at(99))
	want = []Match{{Teams: [2][]int{{11, 10}, {14, 13}}}}
	if !reflect.DeepEqual(matches, want) || len(expired) != 0 {
		t.Errorf("at 99 s: matches %v, expired %v; want %v and none", matches, expired, want)
	}
}

func TestNewQueuePassRefusesWhatTheQueueRefuses(t *testing.T) {
	t.Parallel()
	long := make([]Step, maxSteps+1)
	for i := range long {
		long[i] = Step{AfterS: float64(i), Value: float64(i)}
	}
	for _, tc := range []struct {
		name     string
		teamSize int
		strategy string
		steps    []Step
	}{
		{"no steps", 5, matchrules.GreedyPairs, nil},
		{"first step later", 5, matchrules.GreedyPairs, []Step{{AfterS: 5, Value: 25}}},
		{"narrowing", 5, matchrules.GreedyPairs, []Step{{AfterS: 0, Value: 50}, {AfterS: 10, Value: 25}}},
		{"more steps than a queue holds", 5, matchrules.GreedyPairs, long},
		{"strategy", 5, "best", []Step{{AfterS: 0, Value: 25}}},
		{"team size", 0, matchrules.GreedyPairs, []Step{{AfterS: 0, Value: 25}}},
	} {
		if _, err := NewQueuePass(tc.teamSize, tc.strategy, tc.steps, 0); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := NewQueuePass(5, matchrules.GreedyPairs, long[:maxSteps], 0); err != nil {
		t.Errorf("%d steps: %v", maxSteps, err)
	}
}

// TestQueuePassKeepsTicketsWhole checks the adapter's promises on random queues of parties:
// every match is 2 x 5 players of whole tickets, each ticket's players on one team, nobody
// twice; the tickets past their time to live expire, unmatched, and no other does; and one
// ticket of every match, its anchor, and each of the others accept each other by the steps.
func TestQueuePassKeepsTicketsWhole(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 5))
	steps := []Step{{AfterS: 0, Value: 25}, {AfterS: 5, Value: 50}, {AfterS: 10, Value: 100}, {AfterS: 30, Value: 400}}
	ttl := 60 * time.Second
	made := 0
	for _, strategy := range []string{matchrules.GreedyPairs, matchrules.RatingWindow} {
		m, err := NewQueuePass(5, strategy, steps, ttl)
		if err != nil {
			t.Fatal(err)
		}
		for range 200 {
			sizes := make([]int, 5+rng.IntN(80))
			for i := range sizes {
				sizes[i] = 1 + rng.IntN(6)/3 + rng.IntN(10)/9 // 1 to 3
			}
			waiting := queueOf(rng, sizes...)
			now := time.Duration(len(sizes)+rng.IntN(90)) * time.Second
			matches, expired := m.Tick(waiting, now)
			made += len(matches)
			owner := map[int]int{}
			for ti, tk := range waiting {
				for _, p := range tk.Players {
					owner[p] = ti
				}
			}
			onTeam := map[int][]int{} // ticket -> the team of each of its matched players
			for _, mt := range matches {
				var tickets []int
				for side, team := range mt.Teams {
					if len(team) != 5 {
						t.Fatalf("%s: a team of %d", strategy, len(team))
					}
					for _, p := range team {
						ti, ok := owner[p]
						if !ok {
							t.Fatalf("%s: player %d is not waiting", strategy, p)
						}
						if onTeam[ti] == nil {
							tickets = append(tickets, ti)
						}
						onTeam[ti] = append(onTeam[ti], side)
					}
				}
				// Some ticket of the match, its anchor, accepts every other one, and they it.
				iv := func(ti int) float64 { return Expansion{Steps: steps}.At(now - waiting[ti].Created) }
				accepts := func(a, b int) bool {
					return math.Abs(meanRating(waiting[a].Ratings)-meanRating(waiting[b].Ratings)) <= min(iv(a), iv(b))
				}
				if !slices.ContainsFunc(tickets, func(a int) bool {
					return !slices.ContainsFunc(tickets, func(b int) bool { return !accepts(a, b) })
				}) {
					t.Fatalf("%s: no ticket of the match of tickets %v accepts all the others", strategy, tickets)
				}
			}
			for ti, sides := range onTeam {
				if len(sides) != len(waiting[ti].Players) || slices.Min(sides) != slices.Max(sides) {
					t.Fatalf("%s: ticket %d of %d players matched as %v (teams of its players)", strategy, ti, len(waiting[ti].Players), sides)
				}
			}
			for ti, tk := range waiting {
				late := now-tk.Created >= ttl
				if late != slices.Contains(expired, ti) || late && onTeam[ti] != nil {
					t.Fatalf("%s: ticket %d waited %v: expired %v, matched %v", strategy, ti, now-tk.Created, expired, onTeam[ti])
				}
			}
		}
	}
	if made < 100 {
		t.Errorf("only %d matches over the random queues: the test checks too little", made)
	}
}

// meanRating is the mean of a ticket's ratings, as the pass rates a party.
func meanRating(rs []float64) float64 {
	s := 0.0
	for _, r := range rs {
		s += r
	}
	return s / float64(len(rs))
}
