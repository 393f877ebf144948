package shaped

import (
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// A shaped pass that reuses the arrays of earlier ones (a larger queue, other rules,
// roles or none; two, so that link's spare arrays have changed places twice) returns what a
// pass with new arrays returns. Not parallel: it swaps the
// pool.
func TestShapedPassReusingArraysGivesTheSameResult(t *testing.T) {
	saved := passBufferPool
	defer func() { passBufferPool = saved }()
	fresh := func(tk []matchpool.Ticket, now float64, cfg matchrules.Config) matchpool.Result {
		passBufferPool = &sync.Pool{New: func() any { return new(passBuffers) }}
		res, err := Run(tk, now, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	rng := rand.New(rand.NewPCG(3, 5))
	big, bigNow, bigCfg := testqueue.BenchRoles(2, 3000)
	for run := range 200 {
		tk, cfg := testqueue.RandomShaped(rng)
		now := 60.0
		if run%3 == 2 { // with rules: the arrays link gathers into spares
			tk, now, cfg = testqueue.BenchRoles(uint64(run), 200+rng.IntN(800))
		}
		want := fresh(tk, now, cfg)
		// The earlier pass: the large role queue, or another random one.
		earlier, earlierNow, earlierCfg := big, bigNow, bigCfg
		if run%2 == 1 {
			earlier, earlierCfg = testqueue.RandomShaped(rng)
			earlierNow = 60
		}
		passBufferPool = &sync.Pool{New: func() any { return new(passBuffers) }}
		sc := new(passBuffers)
		passBufferPool.New = func() any { return sc } // both passes get the same arrays
		for range 2 {
			if _, err := Run(earlier, earlierNow, &earlierCfg); err != nil {
				t.Fatal(err)
			}
		}
		if len(sc.sweeps) == 0 || sc.live == nil {
			t.Fatal("the earlier pass kept no arrays")
		}
		got, err := Run(tk, now, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: after another pass\n%+v\nwith new arrays\n%+v", run, got, want)
		}
	}
}
