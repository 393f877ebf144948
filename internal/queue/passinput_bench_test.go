package queue

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkPassInputWithAvoidLists builds a pass's input from 100,000 solo tickets, one of
// which avoids someone: every ticket then gives the pass its players' ids, which share one
// array (allocs/op does not grow with the tickets).
func BenchmarkPassInputWithAvoidLists(b *testing.B) {
	q := DefaultQueue("bench")
	at := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	waiting := make([]Ticket, 100_000)
	for i := range waiting {
		id := "p" + strconv.Itoa(i)
		waiting[i] = Ticket{ID: "t" + strconv.Itoa(i), Queue: q.Name, Status: Searching,
			Players: []Player{{ID: id, Rating: float64(i % 3000)}}, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	}
	waiting[0].Players[0].Avoid = []string{"p1"}
	b.ReportAllocs()
	for b.Loop() {
		if p := newPassInput(q, waiting); len(p.in) != len(waiting) {
			b.Fatalf("%d tickets in the pass, want %d", len(p.in), len(waiting))
		}
	}
}
