package main

import (
	"strings"
	"testing"
	"time"
)

// printSlowest keeps the n slowest requests and prints them in the order they were due.
func TestPrintSlowest(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	samples := []sample{
		{at.Add(3 * time.Millisecond), 9 * time.Millisecond},
		{at.Add(1 * time.Millisecond), 2 * time.Millisecond},
		{at.Add(2 * time.Millisecond), 150 * time.Millisecond},
		{at, 40 * time.Millisecond},
	}
	var b strings.Builder
	printSlowest(&b, samples, 2)
	want := "slow 03:04:05.000 40ms\nslow 03:04:05.002 150ms\n"
	if b.String() != want {
		t.Fatalf("got\n%swant\n%s", b.String(), want)
	}
	b.Reset()
	printSlowest(&b, samples[:1], 5)
	if n := strings.Count(b.String(), "\n"); n != 1 {
		t.Fatalf("more asked than answered: %d lines, want 1", n)
	}
}
