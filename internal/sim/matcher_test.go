package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
)

// queueOf makes waiting tickets of the given party sizes, player ids 0, 1, 2, ... in order,
// ratings drawn uniformly from 0..2000, ticket i created i seconds after the first.
func queueOf(rng *rand.Rand, sizes ...int) []Ticket {
	var ts []Ticket
	p := 0
	for i, n := range sizes {
		t := Ticket{ID: i, Created: time.Duration(i) * time.Second}
		for range n {
			t.Players = append(t.Players, p)
			t.Ratings = append(t.Ratings, 2000*rng.Float64())
			p++
		}
		ts = append(ts, t)
	}
	return ts
}

func TestRandomTakesWhoeverWaitedLongest(t *testing.T) {
	t.Parallel()
	waiting := queueOf(rand.New(rand.NewPCG(1, 1)), 1, 2, 3, 1, 1, 1, 1, 2, 1, 1, 1, 1)
	m := &Random{TeamSize: 3, TTL: 8 * time.Second, Rng: rand.New(rand.NewPCG(2, 2))}
	matches, expired := m.Tick(waiting, 12*time.Second)
	// 16 players: two matches of players 0..11 (tickets 0..8); players 12..15 (tickets 9,
	// 10, 11) are left, having waited 3 s or less: none expires.
	if len(matches) != 2 {
		t.Fatalf("%d matches, want 2", len(matches))
	}
	for k, mt := range matches {
		got := slices.Concat(mt.Teams[0], mt.Teams[1])
		slices.Sort(got)
		for i, p := range got {
			if p != 6*k+i {
				t.Fatalf("match %d has players %v, want %d..%d", k, got, 6*k, 6*k+5)
			}
		}
	}
	if len(expired) != 0 {
		t.Errorf("expired %v, want none", expired)
	}
	// Alone, the three tickets left cannot make a match; at 20 s all have waited 8 s or more.
	_, expired = m.Tick(waiting[9:], 20*time.Second)
	slices.Sort(expired)
	if want := []int{0, 1, 2}; !slices.Equal(expired, want) {
		t.Errorf("expired %v, want %v", expired, want)
	}
}

// TestPairingWithTheThesisWideningIsMakeMatches: with no limit on the interval the adapter
// is MakeMatches on the queue, every match kept.
func TestPairingWithTheThesisWideningIsMakeMatches(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	sizes := make([]int, 500)
	for i := range sizes {
		sizes[i] = 1
	}
	waiting := queueOf(rng, sizes...)
	m, err := NewPairing(5, pairing.GreedyPairs, Expansion{Widening: ThesisWidening}, 0)
	if err != nil {
		t.Fatal(err)
	}
	matches, expired := m.Tick(waiting, 0)
	var ratings []float64
	for _, tk := range waiting {
		ratings = append(ratings, tk.Ratings...)
	}
	want, err := pairing.Make(ratings, pairing.Options{TeamSize: 5, Strategy: pairing.GreedyPairs,
		Interval: pairing.Interval{Initial: 25, Step: 25, Max: math.Inf(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) != 50 || len(want.Matches) != 50 || len(expired) != 0 {
		t.Fatalf("%d matches and %d expired, MakeMatches %d", len(matches), len(expired), len(want.Matches))
	}
	for i, mt := range matches {
		for k, pr := range want.Matches[i].Pairs {
			if mt.Teams[0][k] != pr.Players[0] || mt.Teams[1][k] != pr.Players[1] {
				t.Fatalf("match %d pair %d: %d v %d, MakeMatches %v", i, k, mt.Teams[0][k], mt.Teams[1][k], pr.Players)
			}
		}
	}
}

// TestPairingKeepsEveryPairWithinItsAnchorsInterval checks the adapter's promises on random
// queues with parties and a clock widening: players matched once, whole teams, every pair
// within the interval its older player has earned, only unmatched tickets past their time
// to live expire.
func TestPairingKeepsEveryPairWithinItsAnchorsInterval(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	e := Expansion{Widening: Widening{Initial: 25, Step: 25, EverySeconds: 5, Max: 300}}
	ttl := 60 * time.Second
	made := 0
	for _, strategy := range []pairing.Strategy{pairing.GreedyPairs, pairing.RatingWindow} {
		m, err := NewPairing(5, strategy, e, ttl)
		if err != nil {
			t.Fatal(err)
		}
		for range 200 {
			sizes := make([]int, 5+rng.IntN(80))
			for i := range sizes {
				sizes[i] = 1 + rng.IntN(3)/2
			}
			waiting := queueOf(rng, sizes...)
			now := time.Duration(len(sizes)+rng.IntN(90)) * time.Second
			matches, expired := m.Tick(waiting, now)
			made += len(matches)
			owner := map[int]int{} // player -> ticket index
			rating := map[int]float64{}
			for ti, tk := range waiting {
				for i, p := range tk.Players {
					owner[p], rating[p] = ti, tk.Ratings[i]
				}
			}
			seen := map[int]bool{}
			hit := map[int]bool{}
			for _, mt := range matches {
				if len(mt.Teams[0]) != 5 || len(mt.Teams[1]) != 5 {
					t.Fatalf("teams of %d and %d", len(mt.Teams[0]), len(mt.Teams[1]))
				}
				for k := range 5 {
					a, b := mt.Teams[0][k], mt.Teams[1][k]
					for _, p := range []int{a, b} {
						if seen[p] {
							t.Fatalf("player %d matched twice", p)
						}
						seen[p], hit[owner[p]] = true, true
					}
					la, lb := e.At(now-waiting[owner[a]].Created), e.At(now-waiting[owner[b]].Created)
					if d := math.Abs(rating[a] - rating[b]); d > max(la, lb) {
						t.Fatalf("%s: pair %d v %d differs by %.1f, intervals %v and %v", strategy, a, b, d, la, lb)
					}
				}
			}
			for _, ti := range expired {
				if hit[ti] || now-waiting[ti].Created < ttl {
					t.Fatalf("ticket %d expired: matched %v, waited %v", ti, hit[ti], now-waiting[ti].Created)
				}
			}
			for ti, tk := range waiting {
				if !hit[ti] && now-tk.Created >= ttl && !slices.Contains(expired, ti) {
					t.Fatalf("ticket %d waited %v unmatched and did not expire", ti, now-tk.Created)
				}
			}
		}
	}
	if made < 100 {
		t.Errorf("only %d matches over the random queues: the test checks too little", made)
	}
}
