package queueleader

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The leader's list of waiting tickets is every one of them once, oldest first (ties by id),
// whatever came, went and came back between ticks: it is built from the last tick's order
// and the tickets loaded since.
func TestSortedWaitingIsEveryTicketOldestFirst(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 8))
	r := &Runner{waiting: map[string]queue.Ticket{}}
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	next := 0
	for tick := range 200 {
		for range rng.IntN(30) { // arrivals, some at the same instant, some loaded again
			var tk queue.Ticket
			if len(r.waiting) > 0 && rng.IntN(5) == 0 {
				for _, old := range r.waiting {
					tk = old
					break
				}
			} else {
				tk = queue.Ticket{ID: fmt.Sprintf("t%05d", rng.IntN(100_000)), CreatedAt: t0.Add(time.Duration(next/3) * time.Second)}
				next++
			}
			r.waiting[tk.ID] = tk
			r.arrived = append(r.arrived, tk.ID)
		}
		for id := range r.waiting { // matched, expired, cancelled
			if rng.IntN(4) == 0 {
				delete(r.waiting, id)
			}
		}
		got := r.sortedWaiting()
		var want []queue.Ticket
		for _, tk := range r.waiting {
			want = append(want, tk)
		}
		slices.SortFunc(want, func(a, b queue.Ticket) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
		if !slices.EqualFunc(got, want, func(a, b queue.Ticket) bool { return a.ID == b.ID }) {
			t.Fatalf("tick %d: %d tickets listed, want the %d waiting oldest first", tick, len(got), len(want))
		}
	}
}

// BenchmarkSortedWaiting is a leader's tick over 4,400 waiting tickets, 30 of them new and
// 30 gone since the last tick (300 arrivals a second at a 100 ms tick).
func BenchmarkSortedWaiting(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	r := &Runner{waiting: map[string]queue.Ticket{}}
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	players := []queue.Player{{ID: "p", Rating: 1000}}
	n := 0
	arrive := func() {
		tk := queue.Ticket{ID: fmt.Sprintf("t%08d", n), Queue: "q", Status: queue.Searching, Players: players,
			CreatedAt: t0.Add(time.Duration(n) * 3 * time.Millisecond)}
		n++
		r.waiting[tk.ID] = tk
		r.arrived = append(r.arrived, tk.ID)
	}
	for range 4400 {
		arrive()
	}
	r.sortedWaiting()
	for b.Loop() {
		gone := 0
		for id := range r.waiting {
			if gone == 30 {
				break
			}
			if rng.IntN(100) == 0 {
				delete(r.waiting, id)
				gone++
			}
		}
		for range gone {
			arrive()
		}
		r.sortedWaiting()
	}
}
