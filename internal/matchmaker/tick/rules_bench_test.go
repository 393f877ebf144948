package tick

import (
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
)

// BenchmarkTickRules is the figure for rules: one pass over 5,000 tickets, 5v5, a
// mode (equal, 4 modes), maps (intersect, each ticket 3 of 8) and the rating interval.
func BenchmarkTickRules(b *testing.B) {
	tk, now, cfg := testqueue.BenchRuled(1, 5_000)
	benchRun(b, tk, now, cfg)
}

// The rules benchmark's queue keeps every rule check can afford at that size, and its
// matches are what the rules allow: one mode, a map in common.
func TestTheRulesBenchmarksQueueKeepsTheRules(t *testing.T) {
	t.Parallel()
	tk, now, cfg := testqueue.BenchRuled(1, 5_000)
	res, err := Run(tk, now, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) < 200 {
		t.Fatalf("%d matches from %d tickets", len(res.Matches), len(tk))
	}
	if err := checkResult(tk, now, cfg, res); err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Matches {
		mode, _ := m.Attribute("mode")
		maps, _ := m.Attribute("maps")
		if mode.Str == "" || len(maps.List) == 0 {
			t.Fatalf("match %v: attributes %+v", m.Tickets, m.Attributes)
		}
	}
	t.Logf("%d matches, %d tickets waiting", len(res.Matches), len(res.Waiting))
}

// BenchmarkRulesLargeQueue is the same queue, mode and maps at 100,000 tickets (20% parties,
// as the queue): a figure for the next slice's target, which adds roles.
func BenchmarkRulesLargeQueue(b *testing.B) {
	tk, now, cfg := testqueue.BenchRuled(1, 100_000)
	benchRun(b, tk, now, cfg)
}
