package queuesvc_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/examples/mmf/clans"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// BenchmarkMatchFunctionTick is a leader's tick of a 5v5 queue whose match function is
// examples/mmf's (clans) on loopback, its pool topped up to 5,000 searching tickets before
// each tick (a fifth of them parties of two, half in one of 500 clans): the new tickets
// loaded, the pool encoded and sent, the answer read and checked, its matches committed on
// the memory store. service-ms/tick is the tick's wall time less the function's side (its
// handler, from the request's arrival to its answer written: the body's decoding,
// clans.Match, the answer's encoding); fn-ms/tick is that side. Both are medians over the
// ticks run. all: every match clans proposes (nearly the whole pool: 5,000 tickets leave and
// arrive at each tick); 50: its first 50 only (500 tickets a tick, a pool that stays);
// builtin: no match function, the built-in pass's tick over the same arrivals (its
// service-ms/tick the whole tick), the yardstick of what the service pays either way.
func BenchmarkMatchFunctionTick(b *testing.B) {
	for _, keep := range []int{0, 50, -1} {
		name := "all"
		switch {
		case keep > 0:
			name = fmt.Sprint(keep)
		case keep < 0:
			name = "builtin"
		}
		b.Run("matches="+name, func(b *testing.B) { benchmarkFunctionTick(b, keep) })
	}
}

func benchmarkFunctionTick(b *testing.B, keep int) {
	var fnTime atomic.Int64 // nanoseconds of the last call's handler
	clock := newClock()
	match := clans.Match
	if keep > 0 {
		match = func(ctx context.Context, req *client.MatchFunctionRequest) ([]client.ProposedMatch, error) {
			out, err := clans.Match(ctx, req)
			return out[:min(len(out), keep)], err
		}
	}
	fn := &client.MatchFunctionServer{Secret: functionSecret, Func: match, Now: clock.Now}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		fn.ServeHTTP(w, r)
		fnTime.Store(int64(time.Since(start)))
	}))
	defer srv.Close()
	svc := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Matcher: queue.TickPass{}, Clock: clock,
		Ratings:  ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()),
		Outbound: posts(queuesvc.Config{WebhookAllow: loopback}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config: queuesvc.Config{WebhookAllow: loopback}})
	ctx := context.Background()
	q := queue.DefaultQueue("clans")
	q.GameType, q.Teams, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 2, 5, 5, time.Second
	q.TicketTTL = time.Hour
	q.Attributes = map[string]matchrules.Attribute{clans.Attribute: {Type: matchrules.TypeString}}
	q.MatchFunction = &queue.MatchFunction{URL: srv.URL, Secret: functionSecret, Timeout: 30 * time.Second,
		Mode: queue.FunctionReplace, OnFailure: queue.FailureWait, MaxPool: 5000}
	if keep < 0 {
		q.MatchFunction = nil
	}
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(rctx) }()
	defer func() { cancel(); <-done }()
	waitTick(b, svc, clock.Now())

	rng := rand.New(rand.NewPCG(5000, 1))
	var searching []string
	made := 0
	topUp := func() {
		kept := searching[:0]
		for _, id := range searching {
			if tk, err := svc.GetTicket(ctx, id, 0); err == nil && tk.Status == queue.Searching {
				kept = append(kept, id)
			} else if err == nil && tk.Status == queue.Matched {
				made++
			}
		}
		searching = kept
		for len(searching) < 5000 {
			nt := queue.NewTicket{Queue: "clans", Players: []queue.NewPlayer{{ID: fmt.Sprintf("p%d", rng.Int64()), Rating: rating(40 + rng.Float64()*20)}}}
			if rng.IntN(5) == 0 {
				nt.Players = append(nt.Players, queue.NewPlayer{ID: fmt.Sprintf("p%d", rng.Int64()), Rating: rating(40 + rng.Float64()*20)})
			}
			if rng.IntN(2) == 0 {
				nt.Attributes = map[string]matchrules.Value{clans.Attribute: matchrules.StringValue(fmt.Sprintf("clan%03d", rng.IntN(500)))}
			}
			tk, _, err := svc.CreateTicket(ctx, nt)
			if err != nil {
				b.Fatal(err)
			}
			searching = append(searching, tk.ID)
		}
	}
	var service, function []float64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		topUp()
		fnTime.Store(0)
		b.StartTimer()
		start := time.Now()
		clock.Advance(q.Tick)
		waitTick(b, svc, clock.Now())
		wall, fnSide := time.Since(start), time.Duration(fnTime.Load())
		if fnSide == 0 && keep >= 0 {
			b.Fatal("the tick made no call")
		}
		service = append(service, (wall-fnSide).Seconds()*1000)
		function = append(function, fnSide.Seconds()*1000)
	}
	b.StopTimer()
	topUp()
	b.ReportMetric(medianOf(service), "service-ms/tick")
	b.ReportMetric(medianOf(function), "fn-ms/tick")
	b.ReportMetric(float64(made)/float64(len(service)), "matched-tickets/tick")
}

func waitTick(b *testing.B, svc *queuesvc.Service, at time.Time) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := queuesvc.Ticked(ctx, svc, "clans", at); err != nil {
		b.Fatalf("no tick at %v: %v", at, err)
	}
}

func medianOf(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
