package ratingsdb_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// TestRebuildWhileResultsFlow rebuilds a game type while results keep being posted, one after
// the other at up to 200 a second: results are answered while the rebuild runs, and the
// ratings it leaves are those of a quiet rebuild of the history followed by the same
// results (none lost, none counted twice). 20,000 results (3,000 with -short);
// BenchmarkRebuildWhileResultsFlow runs 100,000 and reports the latencies and memory.
//
// The open-loop subtest posts one every 5 ms whether or not the last was answered, as game
// servers do; results then commit side by side, and after the rebuild those of the same
// side pair see each other's bias a step late (see RecordResult), so only the games are
// compared there.
func TestRebuildWhileResultsFlow(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 3_000
	}
	for _, concurrent := range []bool{false, true} {
		t.Run(map[bool]string{false: "one-after-another", true: "open-loop"}[concurrent], func(t *testing.T) {
			testRebuildWhileResultsFlow(t, n, concurrent)
		})
	}
}

func testRebuildWhileResultsFlow(t *testing.T, n int, concurrent bool) {
	st := rebuildUnderLoad(t, n, 200, concurrent)
	t.Logf("%d results rebuilt in %s (%d replayed, %d posted meanwhile, %d answered before it ended); "+
		"latency of the results posted meanwhile p50 %s, p99 %s, max %s (without a rebuild p50 %s, p99 %s); peak live heap %.1f MB over the test's own",
		n, st.rebuild, st.replayed, st.posted, st.during, st.p50, st.p99, st.max, st.quietP50, st.quietP99, float64(st.peakHeap)/1e6)
	if st.during < 5 {
		t.Fatalf("only %d results were answered while the rebuild ran: results were held off", st.during)
	}
}

// BenchmarkRebuildWhileResultsFlow is the test at 100,000 results (REBUILD_RESULTS to change
// it), once:
//
//	go test -run '^$' -bench RebuildWhileResultsFlow -benchtime 1x ./db/
func BenchmarkRebuildWhileResultsFlow(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("REBUILD_RESULTS")); err == nil && v > 0 {
		n = v
	}
	for _, concurrent := range []bool{false, true} {
		b.Run(map[bool]string{false: "one-after-another", true: "open-loop"}[concurrent], func(b *testing.B) {
			benchRebuildWhileResultsFlow(b, n, concurrent)
		})
	}
}

func benchRebuildWhileResultsFlow(b *testing.B, n int, concurrent bool) {
	for b.Loop() {
		st := rebuildUnderLoad(b, n, 200, concurrent)
		b.ReportMetric(float64(st.posted)/st.rebuild.Seconds(), "posted/s")
		b.ReportMetric(st.rebuild.Seconds(), "rebuild-s")
		b.ReportMetric(float64(st.p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(st.p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(st.quietP50.Microseconds())/1000, "quiet-p50-ms")
		b.ReportMetric(float64(st.quietP99.Microseconds())/1000, "quiet-p99-ms")
		b.ReportMetric(float64(st.max.Microseconds())/1000, "max-ms")
		b.ReportMetric(float64(st.during), "answered-during")
		b.ReportMetric(float64(st.peakHeap)/1e6, "peak-live-heap-MB")
	}
}

type loadStats struct {
	rebuild        time.Duration
	replayed       int // results the rebuild applied
	posted, during int // results posted while it ran, and answered before it ended
	p50, p99, max  time.Duration
	peakHeap       uint64 // the live heap's peak while the rebuild ran, over the test's own before it
	// quietP50 and quietP99 are the latencies of the same load for two seconds before it.
	quietP50, quietP99 time.Duration
}

// quantiles are the median, the 99th percentile and the maximum.
func quantiles(d []time.Duration) (p50, p99, most time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	return q(0.5), q(0.99), d[len(d)-1]
}

// rebuildUnderLoad stores n results of the NS2 league (200 regulars) as history, then
// rebuilds the game type while posting further results: one at a time, at most rate a
// second, until the rebuild ends and 20 after; or, concurrent, rate a second open-loop until
// it ends. It checks the game type's ratings against a replay
// of the whole stored history, in order, and returns what it measured.
func rebuildUnderLoad(tb testing.TB, n int, rate float64, concurrent bool) loadStats {
	ctx := context.Background()
	s, _ := openStore(tb)
	cfg := league.Default(1)
	cfg.Matches = n + n/2 + 2000
	all := league.Results(league.Simulate(cfg))
	if err := s.InsertHistory(ctx, all[:n]); err != nil {
		tb.Fatal(err)
	}
	// Only the results still to post are kept: the test's own heap, which the collector
	// marks while the rebuild runs, stays small, as the service's is.
	all = slices.Clone(all[n:])
	runtime.GC()
	svc := ratings.NewService(s, ratings.DefaultModel())

	// The live heap as the last collection found it: its peak while the rebuild runs, less
	// what the test holds itself, is what the rebuild held.
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	readLive := func() uint64 { metrics.Read(live); return live[0].Value.Uint64() }
	runtime.GC()
	base := readLive()
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if l := readLive(); l > base && l-base > peak.Load() {
				peak.Store(l - base)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	var st loadStats
	start := time.Now()
	trace := func(t0 time.Time) {
		if d := time.Since(t0); d > 50*time.Millisecond && os.Getenv("REBUILD_TRACE") != "" {
			tb.Logf("%8.3fs a result took %s", time.Since(start).Seconds(), d)
		}
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	next := 0
	// postUntil posts results until done is closed (then tail more, one after another),
	// returning the latencies of those answered before it was.
	postUntil := func(done <-chan struct{}, tail int) []time.Duration {
		var latencies []time.Duration
		if !concurrent {
			for after := -1; after != 0; {
				<-tick.C
				if next == len(all) {
					tb.Fatalf("the rebuild outlasted %d posted results", next)
				}
				running := after < 0
				t0 := time.Now()
				if _, err := svc.Record(ctx, all[next]); err != nil {
					tb.Fatalf("result %d during the rebuild: %v", next, err)
				}
				next++
				select {
				case <-done:
					if after < 0 {
						after = tail + 1
					}
					after--
					running = false
				default:
				}
				if running {
					latencies = append(latencies, time.Since(t0))
					trace(t0)
				}
			}
			return latencies
		}
		// Open loop: a result every tick whether or not the last one was answered, until done;
		// then the ones under way are waited for.
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, len(all))
	posting:
		for {
			select {
			case <-done:
				break posting
			case <-tick.C:
			}
			if next == len(all) {
				tb.Fatalf("the rebuild outlasted %d posted results", next)
			}
			r := all[next]
			next++
			wg.Go(func() {
				t0 := time.Now()
				if _, err := svc.Record(ctx, r); err != nil {
					errs <- err
					return
				}
				select {
				case <-done:
				default:
					mu.Lock()
					latencies = append(latencies, time.Since(t0))
					mu.Unlock()
					trace(t0)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			tb.Fatal(err)
		}
		return latencies
	}
	// The same load without a rebuild first, for comparison: on a loaded machine the
	// latencies are the machine's as much as the rebuild's.
	quiet := make(chan struct{})
	time.AfterFunc(2*time.Second, func() { close(quiet) })
	st.quietP50, st.quietP99, _ = quantiles(postUntil(quiet, 0))
	quietPosted := next

	var rebuildErr error
	var rep ratings.RebuildReport
	done := make(chan struct{})
	start = time.Now()
	go func() {
		defer close(done)
		rep, rebuildErr = svc.Rebuild(ctx, cfg.GameType, func(p ratings.Progress) {
			if p.Done == p.Total && os.Getenv("REBUILD_TRACE") != "" {
				tb.Logf("%8.3fs %s %d", time.Since(start).Seconds(), p.Phase, p.Done)
			}
		})
		st.rebuild = time.Since(start)
	}()
	latencies := postUntil(done, 20)
	close(stopSampling)
	<-sampled
	if rebuildErr != nil {
		tb.Fatal(rebuildErr)
	}
	st.peakHeap = peak.Load()
	st.posted, st.during, st.replayed = next-quietPosted, len(latencies), rep.Results
	if rep.Results < n+quietPosted || rep.Results > n+next {
		tb.Fatalf("the rebuild replayed %d results, want %d to %d", rep.Results, n+quietPosted, n+next)
	}
	st.p50, st.p99, st.max = quantiles(latencies)

	// The ratings are a quiet rebuild's of the history the rebuild found followed by the
	// results posted meanwhile and after, in order: a replay of the whole stored history.
	var want ratings.State
	stored := 0
	if err := s.History(ctx, cfg.GameType, func(r ratings.Result) error {
		if !concurrent && stored >= n && r.MatchID != all[stored-n].MatchID {
			return fmt.Errorf("history[%d] is %s, want %s: the results are stored in the order posted", stored, r.MatchID, all[stored-n].MatchID)
		}
		stored++
		_, err := want.Apply(ratings.DefaultModel(), r)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	if stored != n+next {
		tb.Fatalf("%d results stored, want %d", stored, n+next)
	}
	c, err := ratings.NewContext(cfg.GameType, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ps := want.Participants()
	got, err := s.Ratings(ctx, c, ps)
	if err != nil {
		tb.Fatal(err)
	}
	if len(got) != len(ps) {
		tb.Fatalf("%d ratings stored, want %d", len(got), len(ps))
	}
	for _, p := range ps {
		g, w := got[p], want.Ratings[p]
		if g.Games != w.Games {
			tb.Fatalf("%s played %d games, want %d: a result was lost or counted twice", p, g.Games, w.Games)
		}
		if concurrent {
			continue // results applied side by side after the rebuild see each other's bias late (see RecordResult)
		}
		if !nearly(g.Skill, w.Skill) || !nearly(g.Sigma, w.Sigma) || !nearly(g.Offset, w.Offset) || !nearly(g.Commander, w.Commander) {
			tb.Fatalf("%s: %+v, want %+v (a quiet rebuild's, then the same results)", p, g, w)
		}
	}
	var games int
	for _, r := range want.Ratings {
		games += r.Games
	}
	tb.Logf("%d participants, %d participations, as a quiet replay of %d results", len(ps), games, stored)
	return st
}

// nearly is equality to rounding: the results recorded after the rebuild read the bias
// table's sums as Postgres adds up its shards, in another order than a replay.
func nearly(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b))
}

// TestRebuildStepsAsideForAStalledBatch: a rebuild's cut waits for the results under way,
// which hold the game type's lock shared, and while it waits Postgres queues every later
// result behind it. A batch stalled in flight (here its apply held; under a loaded suite a
// commit waiting out a checkpoint) must not hold the results after it for as long as it
// stalls: the cut gives its place up and tries again, and a result recorded meanwhile commits
// while the stalled batch still holds the lock. Before the cut's wait was bounded, the later
// result waited for the stalled one and this test failed at its 2 s deadline.
func TestRebuildStepsAsideForAStalledBatch(t *testing.T) {
	s, url := openStore(t)
	ctx := context.Background()
	first := fiveVFive("first", "f")
	if _, err := s.RecordResult(ctx, request(first), apply(first, nil)); err != nil {
		t.Fatal(err)
	}
	release := holdCommitter(t, s)
	type rebuilt struct {
		rep ratings.RebuildReport
		err error
	}
	done := make(chan rebuilt, 1)
	go func() {
		rep, err := s.Rebuild(ctx, "tdm", ratings.Replayer(ratings.DefaultModel()), nil)
		done <- rebuilt{rep, err}
	}()
	waitForExclusiveWaiter(t, url)

	later := fiveVFive("later", "l")
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	t0 := time.Now()
	_, err := s.RecordResult(rctx, request(later), apply(later, nil))
	took := time.Since(t0)
	release()
	if err != nil {
		t.Fatalf("a result recorded while a rebuild waited behind a stalled batch: %v (after %s)", err, took)
	}
	t.Logf("the later result committed in %s while the stalled batch held the lock", took)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.rep.Results != 3 {
		t.Errorf("the rebuild replayed %d results, want 3 (the first, the stalled one and the later one)", r.rep.Results)
	}
}

// waitForExclusiveWaiter waits until a transaction of the test's database waits for an
// advisory lock in exclusive mode: the rebuild's cut, queued behind a batch.
func waitForExclusiveWaiter(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND mode = 'ExclusiveLock' AND NOT granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
		if err != nil {
			t.Fatalf("no rebuild waited for the exclusive lock: %v", err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no rebuild waited for the exclusive lock within 10 s")
		case <-time.After(2 * time.Millisecond):
		}
	}
}
