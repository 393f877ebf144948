package queuesvc_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// BenchmarkQueueTick is a leader's tick of a 1v1 queue on the memory store with the built-in
// pass, 4,000 searching tickets in four modes (an equal rule) topped up before each tick: the
// changes loaded, the pass, the matches committed, the stats. The queue has no partition_by:
// what a queue costs that does not use partitions (BenchmarkPartitionedTick is the same queue
// split by mode).
func BenchmarkQueueTick(b *testing.B) {
	benchmarkQueueTick(b, func(*queue.Queue) {}, []string{"modes"})
}

// benchmarkQueueTick runs the ticks of the queue edit makes, waiting for each of marks (the
// queue's tick marks: its name, or each partition's key) to tick at the new time.
func benchmarkQueueTick(b *testing.B, edit func(*queue.Queue), marks []string) {
	clock := newClock()
	svc := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Matcher: queue.TickPass{}, Clock: clock,
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	q := queue.DefaultQueue("modes")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick, q.TicketTTL = "ctf", 1, 1, time.Second, time.Hour
	q.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString}}
	q.Rules = []matchrules.Rule{{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}}
	edit(&q)
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4000, 1))
	var searching []string
	topUp := func() {
		kept := searching[:0]
		for _, id := range searching {
			if tk, err := svc.GetTicket(ctx, id, 0); err == nil && tk.Status == queue.Searching {
				kept = append(kept, id)
			}
		}
		searching = kept
		for len(searching) < 4000 {
			nt := queue.NewTicket{Queue: "modes", Players: []queue.NewPlayer{{ID: fmt.Sprintf("p%d", rng.Int64()), Rating: rating(1000 + 200*rng.NormFloat64())}},
				Attributes: map[string]matchrules.Value{"mode": matchrules.StringValue(fmt.Sprintf("m%d", rng.IntN(4)))}}
			tk, _, err := svc.CreateTicket(ctx, nt)
			if err != nil {
				b.Fatal(err)
			}
			searching = append(searching, tk.ID)
		}
	}
	topUp() // every partition has tickets before the loop starts
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(rctx) }()
	defer func() { cancel(); <-done }()
	waitTicks(b, svc, marks, clock.Now())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		topUp()
		b.StartTimer()
		clock.Advance(q.Tick)
		waitTicks(b, svc, marks, clock.Now())
	}
}

func waitTicks(b *testing.B, svc *queuesvc.Service, marks []string, at time.Time) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range marks {
		if err := queuesvc.Ticked(ctx, svc, m, at); err != nil {
			b.Fatalf("no tick of %s at %v: %v", m, at, err)
		}
	}
}
