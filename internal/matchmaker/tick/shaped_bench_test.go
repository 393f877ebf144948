package tick

import (
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// BenchmarkShapedFreeForAll is one pass over 100,000 solo tickets in a 10-player
// free-for-all (10 teams of 1).
func BenchmarkShapedFreeForAll(b *testing.B) {
	tk, now := testqueue.BenchShaped(1, 100_000, 1)
	cfg := testqueue.BenchConfig(matchrules.RatingWindow, false)
	cfg.TeamSize, cfg.Shape = 1, testqueue.Symmetric(10, 1)
	benchRun(b, tk, now, cfg)
}

// BenchmarkShaped30x3 is one pass over 100,000 tickets (parties of up to 3) in 30 teams of
// 3.
func BenchmarkShaped30x3(b *testing.B) {
	tk, now := testqueue.BenchShaped(1, 100_000, 3)
	cfg := testqueue.BenchConfig(matchrules.RatingWindow, false)
	cfg.TeamSize, cfg.Shape = 3, testqueue.Symmetric(30, 3)
	benchRun(b, tk, now, cfg)
}

// BenchmarkShapedRoles is the role queue: 100,000 tickets, 5v5 with 20% parties, a
// mode (equal, 4 modes), maps (intersect, 3 of 8) and a 1/2/2 role composition.
func BenchmarkShapedRoles(b *testing.B) {
	tk, now, cfg := testqueue.BenchRoles(1, 100_000)
	benchRun(b, tk, now, cfg)
}

// BenchmarkShapedRolesDPSHeavy is the same queue with most players on dps: most tickets
// cannot be matched, and every one of them walks its candidates at each pass.
func BenchmarkShapedRolesDPSHeavy(b *testing.B) {
	tk, now, cfg := testqueue.BenchDPSHeavy(1, 100_000)
	benchRun(b, tk, now, cfg)
}

// The shaped benchmarks' passes make matches that keep their shapes and rules.
func TestShapedBenchmarkQueuesKeepTheirShapes(t *testing.T) {
	t.Parallel()
	n := 20_000
	if testing.Short() {
		n = 3_000
	}
	type queue struct {
		name string
		tk   []matchpool.Ticket
		cfg  matchrules.Config
	}
	ffa, _ := testqueue.BenchShaped(1, n, 1)
	big, _ := testqueue.BenchShaped(1, n, 3)
	roles, now, rcfg := testqueue.BenchRoles(1, n)
	ffaCfg := testqueue.BenchConfig(matchrules.RatingWindow, false)
	ffaCfg.TeamSize, ffaCfg.Shape = 1, testqueue.Symmetric(10, 1)
	bigCfg := testqueue.BenchConfig(matchrules.RatingWindow, false)
	bigCfg.TeamSize, bigCfg.Shape = 3, testqueue.Symmetric(30, 3)
	for _, q := range []queue{{"ffa", ffa, ffaCfg}, {"30x3", big, bigCfg}, {"roles", roles, rcfg}} {
		res, err := Run(q.tk, now, q.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) < n/100 {
			t.Fatalf("%s: %d matches from %d tickets", q.name, len(res.Matches), n)
		}
		ref := shapedRef{tk: q.tk, cfg: q.cfg, now: now}
		if msg := ref.checkMatches(res.Matches); msg != "" {
			t.Fatalf("%s: %s", q.name, msg)
		}
		t.Logf("%s: %d matches, %d tickets waiting", q.name, len(res.Matches), len(res.Waiting))
	}
}
