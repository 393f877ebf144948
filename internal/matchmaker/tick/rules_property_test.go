package tick

import (
	"math/rand/v2"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Random small queues with rules keep every rule check knows (no match breaks a rule, the
// oldest is not skipped, Waiting is the tickets left) and agree with the reference, with
// both strategies, latency, parties and backfills. Without the rules' checks in the pass,
// the rules are broken in most cases (see TestIgnoringARuleIsCaught).
func TestRandomRuledQueuesKeepTheRulesAndMatchTheReference(t *testing.T) {
	t.Parallel()
	cases := 4000
	if testing.Short() {
		cases = 600
	}
	var matches, waits, turnedDown, fills int
	for seed := range uint64(cases) {
		rng := rand.New(rand.NewPCG(seed, 0x4a1e5))
		tk, now, cfg := testqueue.Random(rng, 11)
		if rng.IntN(3) == 0 {
			tk = testqueue.WithBackfills(rng, tk, now, cfg)
		}
		tk, cfg = testqueue.WithRules(rng, tk, cfg)
		if err := againstTheReference(tk, now, cfg); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		res, _ := Run(tk, now, cfg)
		matches += len(res.Matches)
		fills += len(res.Fills)
		for _, x := range res.Waiting {
			if x.Rule != matchrules.WaitInterval && x.Rule != matchrules.WaitLatency {
				waits++
			}
			if x.Found {
				turnedDown++
			}
		}
	}
	// (A fifth: the balance turns down the uneven matches with a party, a tenth of them.)
	if matches < cases/5 || waits < cases/4 || turnedDown < cases/50 || fills < cases/10 {
		t.Fatalf("%d matches, %d fills, %d tickets waiting on a rule, %d on a match turned down in %d cases: the test hardly tests",
			matches, fills, waits, turnedDown, cases)
	}
	t.Logf("%d matches, %d fills, %d tickets waiting on a rule, %d on a match turned down, in %d cases",
		matches, fills, waits, turnedDown, cases)
}
