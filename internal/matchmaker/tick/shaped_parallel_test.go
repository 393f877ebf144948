package tick

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
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
	run := func(tk []Ticket, now float64, cfg Config, min int) Result {
		parallelMin = min
		res, err := Run(tk, now, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	type queue struct {
		tk  []Ticket
		now float64
		cfg Config
	}
	n := 6000
	if testing.Short() {
		n = 2000
	}
	var qs []queue
	tk, now, cfg := benchRoleQueue(4, n)
	qs = append(qs, queue{tk, now, cfg})
	tk, now, cfg = benchDPSHeavyQueue(5, n)
	qs = append(qs, queue{tk, now, cfg})
	rng := rand.New(rand.NewPCG(7, 11))
	for range 200 {
		tk, cfg := randomShapedQueue(rng)
		// A mode of 1-4 values partitions the queue (the pass forks with 2 or more).
		modes := []string{"a", "b", "c", "d"}[:1+rng.IntN(4)]
		cfg.Attributes = map[string]Attribute{"mode": {Type: TypeString}}
		cfg.Rules = []Rule{{Name: "mode", Kind: RuleEqual, Attribute: "mode"}}
		expire := rng.IntN(2) == 0 // some tickets expired: the sweeps' live tickets leave gaps
		for i := range tk {
			tk[i].Attributes = map[string]Value{"mode": StringValue(modes[rng.IntN(len(modes))])}
			if expire && rng.IntN(5) == 0 {
				tk[i].ExpiresAt = 30
			}
		}
		qs = append(qs, queue{tk, 60, cfg})
	}
	// More partitions than join merges as runs (each leaves waits): it sorts them.
	for k := range 3 {
		tk, now := benchShapedQueue(uint64(k), 800, 1)
		cfg := benchConfig(RatingWindow, false)
		cfg.TeamSize, cfg.Shape = 1, symmetric(10, 1)
		cfg.Attributes = map[string]Attribute{"mode": {Type: TypeNumber}}
		cfg.Rules = []Rule{{Name: "mode", Kind: RuleEqual, Attribute: "mode"}}
		for i := range tk {
			tk[i].Attributes = map[string]Value{"mode": NumberValue(float64(rng.IntN(2 * maxMergedRuns)))}
		}
		qs = append(qs, queue{tk, now, cfg})
	}
	// Invalid tickets: the faults of every sweep, in ticket order.
	for range 20 {
		tk, cfg := randomShapedQueue(rng)
		cfg.Attributes = map[string]Attribute{"mode": {Type: TypeString}}
		cfg.Rules = []Rule{{Name: "mode", Kind: RuleEqual, Attribute: "mode"}}
		for i := range tk {
			tk[i].Attributes = map[string]Value{"mode": StringValue("a")}
			switch rng.IntN(8) {
			case 0:
				tk[i].Attributes["map"] = StringValue("dust") // undeclared
			case 1:
				tk[i].Attributes["mode"] = NumberValue(1) // of the wrong type
			}
		}
		qs = append(qs, queue{tk, 60, cfg})
	}
	matched, failed := 0, 0
	for i, q := range qs {
		parallelMin = len(q.tk) + 1
		_, wantErr := Run(q.tk, q.now, q.cfg)
		parallelMin = 0
		_, gotErr := Run(q.tk, q.now, q.cfg)
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
