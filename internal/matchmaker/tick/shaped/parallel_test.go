package shaped

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// A pass that reads its tickets and serves its partitions in parallel returns what one
// goroutine reading them and serving every anchor oldest first returns: the same matches,
// waits and explanations, or the same faults, in the same order.
// Not parallel: it sets parallelMin. Under -race it also finds what the goroutines share.
func TestShapedParallelPassGivesTheSequentialResult(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: the pass does not fork")
	}
	saved := parallelMin
	defer func() { parallelMin = saved }()
	run := func(tk []matchpool.Ticket, now float64, cfg matchrules.Config, min int) matchpool.Result {
		parallelMin = min
		res, err := Run(tk, now, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	type queue struct {
		tk  []matchpool.Ticket
		now float64
		cfg matchrules.Config
	}
	n := 6000
	if testing.Short() {
		n = 2000
	}
	var qs []queue
	tk, now, cfg := testqueue.BenchRoles(4, n)
	qs = append(qs, queue{tk, now, cfg})
	tk, now, cfg = testqueue.BenchDPSHeavy(5, n)
	qs = append(qs, queue{tk, now, cfg})
	rng := rand.New(rand.NewPCG(7, 11))
	for range 200 {
		tk, cfg := testqueue.RandomShaped(rng)
		// A mode of 1-4 values partitions the queue (the pass forks with 2 or more).
		modes := []string{"a", "b", "c", "d"}[:1+rng.IntN(4)]
		cfg.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString}}
		cfg.Rules = []matchrules.Rule{{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}}
		expire := rng.IntN(2) == 0 // some tickets expired: the sweeps' live tickets leave gaps
		for i := range tk {
			tk[i].Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue(modes[rng.IntN(len(modes))])}
			if expire && rng.IntN(5) == 0 {
				tk[i].ExpiresAt = 30
			}
		}
		qs = append(qs, queue{tk, 60, cfg})
	}
	// More partitions than join merges as runs (each leaves waits): it sorts them.
	for k := range 3 {
		tk, now := testqueue.BenchShaped(uint64(k), 800, 1)
		cfg := testqueue.BenchConfig(matchrules.RatingWindow, false)
		cfg.TeamSize, cfg.Shape = 1, testqueue.Symmetric(10, 1)
		cfg.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeNumber}}
		cfg.Rules = []matchrules.Rule{{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}}
		for i := range tk {
			tk[i].Attributes = map[string]matchrules.Value{"mode": matchrules.NumberValue(float64(rng.IntN(2 * maxMergedRuns)))}
		}
		qs = append(qs, queue{tk, now, cfg})
	}
	// Invalid tickets: the faults of every sweep, in ticket order.
	for range 20 {
		tk, cfg := testqueue.RandomShaped(rng)
		cfg.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString}}
		cfg.Rules = []matchrules.Rule{{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}}
		for i := range tk {
			tk[i].Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue("a")}
			switch rng.IntN(8) {
			case 0:
				tk[i].Attributes["map"] = matchrules.StringValue("dust") // undeclared
			case 1:
				tk[i].Attributes["mode"] = matchrules.NumberValue(1) // of the wrong type
			}
		}
		qs = append(qs, queue{tk, 60, cfg})
	}
	matched, failed := 0, 0
	for i, q := range qs {
		parallelMin = len(q.tk) + 1
		_, wantErr := Run(q.tk, q.now, &q.cfg)
		parallelMin = 0
		_, gotErr := Run(q.tk, q.now, &q.cfg)
		if !reflect.DeepEqual(gotErr, wantErr) {
			t.Fatalf("queue %d: in parallel %v, in one goroutine %v", i, gotErr, wantErr)
		}
		if wantErr != nil {
			failed++
			continue
		}
		want := run(q.tk, q.now, q.cfg, len(q.tk)+1)
		got := run(q.tk, q.now, q.cfg, 0)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("queue %d: in parallel\n%+v\nin one goroutine\n%+v", i, got, want)
		}
		if len(want.Matches) > 0 {
			matched++
		}
	}
	if matched < 40 || failed < 10 {
		t.Fatalf("only %d queues made matches, %d were refused", matched, failed)
	}
}
