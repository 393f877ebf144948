package tick

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
)

// A pass that serves its partitions in parallel returns what one goroutine serving every
// anchor oldest first returns: the same matches, waits and explanations, in the same order.
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
		for i := range tk {
			tk[i].Attributes = map[string]Value{"mode": StringValue(modes[rng.IntN(len(modes))])}
		}
		qs = append(qs, queue{tk, 60, cfg})
	}
	matched := 0
	for i, q := range qs {
		want := run(q.tk, q.now, q.cfg, len(q.tk)+1)
		got := run(q.tk, q.now, q.cfg, 0)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("queue %d: in parallel\n%+v\nin one goroutine\n%+v", i, got, want)
		}
		if len(want.Matches) > 0 {
			matched++
		}
	}
	if matched < 40 {
		t.Fatalf("only %d queues made matches", matched)
	}
}
