package queue

import (
	"slices"
	"testing"
)

func TestEventLogWindow(t *testing.T) {
	t.Parallel()
	seqs := func(evs []Event) []int64 {
		var out []int64
		for _, e := range evs {
			out = append(out, e.Seq)
		}
		return out
	}
	l := EventLogAfter(10)
	if evs, covered := l.After(10); len(evs) != 0 || !covered || l.Head() != 10 {
		t.Fatalf("empty after 10: %v %v head %d", evs, covered, l.Head())
	}
	for seq := int64(11); seq <= 15; seq++ {
		l.Append(Event{Seq: seq})
	}
	l.Drop(2) // 11, 12 gone
	if got := seqs(l.Kept()); !slices.Equal(got, []int64{13, 14, 15}) || l.Head() != 15 {
		t.Fatalf("kept %v head %d, want 13-15 and 15", got, l.Head())
	}
	for _, c := range []struct {
		after   int64
		want    []int64
		covered bool
	}{{11, []int64{13, 14, 15}, false}, {12, []int64{13, 14, 15}, true}, {14, []int64{15}, true}, {15, nil, true}, {20, nil, true}} {
		evs, covered := l.After(c.after)
		if got := seqs(evs); !slices.Equal(got, c.want) || covered != c.covered {
			t.Errorf("after %d: %v covered %v, want %v %v", c.after, got, covered, c.want, c.covered)
		}
	}
	l.Drop(0)
	l.Drop(3)
	if evs, covered := l.After(15); len(evs) != 0 || !covered || l.Head() != 15 {
		t.Fatalf("all dropped, after 15: %v %v head %d", evs, covered, l.Head())
	}
}
