package tick

import (
	"math/rand/v2"
	"testing"
)

// benchShapedQueue is the queue (benchQueue) with its parties cut to at most
// maxParty players: a free-for-all takes solos only, a 30 x 3 parties of up to 3.
func benchShapedQueue(seed uint64, n, maxParty int) ([]Ticket, float64) {
	tk, now := benchQueue(seed, n, false)
	for i := range tk {
		tk[i].Ratings = tk[i].Ratings[:min(len(tk[i].Ratings), maxParty)]
	}
	return tk, now
}

// BenchmarkShapedFreeForAll is one pass over 100,000 solo tickets in a 10-player
// free-for-all (10 teams of 1).
func BenchmarkShapedFreeForAll(b *testing.B) {
	tk, now := benchShapedQueue(1, 100_000, 1)
	cfg := benchConfig(RatingWindow, false)
	cfg.TeamSize, cfg.Shape = 1, symmetric(10, 1)
	benchRun(b, tk, now, cfg)
}

// BenchmarkShaped30x3 is one pass over 100,000 tickets (parties of up to 3) in 30 teams of
// 3.
func BenchmarkShaped30x3(b *testing.B) {
	tk, now := benchShapedQueue(1, 100_000, 3)
	cfg := benchConfig(RatingWindow, false)
	cfg.TeamSize, cfg.Shape = 3, symmetric(30, 3)
	benchRun(b, tk, now, cfg)
}

// benchRoleQueue is the rules benchmark's queue (4 modes, 3 of 8 maps) at n tickets, 5v5
// with a 1 tank / 2 healers / 2 dps composition: 20% of the players play tank only, 30%
// healer only, 30% dps only, 20% all three (in their order of preference), so that the
// roles the queue offers are about those its matches need.
func benchRoleQueue(seed uint64, n int) ([]Ticket, float64, Config) {
	return benchRoleQueueOf(seed, n, func(x int) []string {
		switch {
		case x < 2:
			return []string{"tank"}
		case x < 5:
			return []string{"healer"}
		case x < 8:
			return []string{"dps"}
		default:
			return []string{"dps", "healer", "tank"}
		}
	})
}

// benchDPSHeavyQueue is benchRoleQueue where players pick as they do in games whose role
// queues wait long for dps: 20% tank only, 20% healer or dps, 40% dps only, 20% any; the
// healers run out and most tickets cannot be matched.
func benchDPSHeavyQueue(seed uint64, n int) ([]Ticket, float64, Config) {
	return benchRoleQueueOf(seed, n, func(x int) []string {
		switch {
		case x < 2:
			return []string{"tank"}
		case x < 4:
			return []string{"healer", "dps"}
		case x < 8:
			return []string{"dps"}
		default:
			return []string{"dps", "tank", "healer"}
		}
	})
}

// benchRoleQueueOf gives each player the roles pick(a uniform 0..9) lists.
func benchRoleQueueOf(seed uint64, n int, pick func(x int) []string) ([]Ticket, float64, Config) {
	tk, now, cfg := benchRuledQueue(seed, n)
	rng := rand.New(rand.NewPCG(seed, 0x201e5))
	cfg.Roles = []string{"tank", "healer", "dps"}
	comp := map[string]RoleRange{"tank": {1, 1}, "healer": {2, 2}, "dps": {2, 2}}
	cfg.Shape = []TeamDef{{Size: 5, Composition: comp}, {Size: 5, Composition: comp}}
	for i := range tk {
		tk[i].Roles = make([][]string, len(tk[i].Ratings))
		// A party whose roles fit no team is refused by the service: its players pick again.
		for try := 0; try == 0 || try < 20 && !cfg.partyFits(tk[i].Roles); try++ {
			for p := range tk[i].Roles {
				tk[i].Roles[p] = pick(rng.IntN(10))
			}
		}
		if !cfg.partyFits(tk[i].Roles) {
			tk[i].Roles = nil
		}
	}
	return tk, now, cfg
}

// BenchmarkShapedRoles is the role queue: 100,000 tickets, 5v5 with 20% parties, a
// mode (equal, 4 modes), maps (intersect, 3 of 8) and a 1/2/2 role composition.
func BenchmarkShapedRoles(b *testing.B) {
	tk, now, cfg := benchRoleQueue(1, 100_000)
	benchRun(b, tk, now, cfg)
}

// BenchmarkShapedRolesDPSHeavy is the same queue with most players on dps: most tickets
// cannot be matched, and every one of them walks its candidates at each pass.
func BenchmarkShapedRolesDPSHeavy(b *testing.B) {
	tk, now, cfg := benchDPSHeavyQueue(1, 100_000)
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
		tk   []Ticket
		cfg  Config
	}
	ffa, _ := benchShapedQueue(1, n, 1)
	big, _ := benchShapedQueue(1, n, 3)
	roles, now, rcfg := benchRoleQueue(1, n)
	ffaCfg := benchConfig(RatingWindow, false)
	ffaCfg.TeamSize, ffaCfg.Shape = 1, symmetric(10, 1)
	bigCfg := benchConfig(RatingWindow, false)
	bigCfg.TeamSize, bigCfg.Shape = 3, symmetric(30, 3)
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
