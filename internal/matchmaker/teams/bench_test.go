package teams

import (
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
)

// Benchmarks of Split on random players (weights uniform in [0, 100), so no perfect split
// exists and the exact searches cannot stop early). "bots" is a server for more players than
// there are humans (mean bot 50, target N+6, map for 4..64): the default cap allows head
// counts up to 9N/16 a team, so several head-count classes are searched.
//
//	go test -run '^$' -bench 'BenchmarkSplit' -benchtime 300ms -count 6 ./internal/matchmaker/teams
//
// (several minutes). The "exact" metric says which path answered. The seed's C program falls
// back to a heuristic above 16 players; docs/performance.md, "Team splits", has the figures,
// the goals (17 humans exact, then 24 and 32 with bots and caps too, 64 by the heuristic)
// and the seed's program's time.

func benchWeights(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 17))
	w := make([]float64, n)
	for i := range w {
		w[i] = rng.Float64() * 100
	}
	return w
}

func benchOptions(teams, n int, bots bool) SplitOptions {
	o := SplitOptions{Teams: teams}
	if bots {
		o.Bots = &BotRule{MeanWeight: 50, TargetPlayers: n + 6, RecommendedMin: 4, RecommendedMax: 64}
	}
	return o
}

func BenchmarkSplitSeedExample(b *testing.B) {
	benchSplit(b, seedExample, SplitOptions{Teams: 2, Bots: &seedBots})
}

func BenchmarkSplit(b *testing.B) {
	series := []struct{ teams, n int }{
		{2, 8}, {2, 16}, {2, 20}, {2, 24}, {2, 32}, {2, 40}, {2, 64}, {2, 128}, {2, 256},
		{3, 12}, {3, 16}, {3, 20}, {3, 24}, {3, 64},
		{4, 12}, {4, 16}, {4, 20}, {4, 24}, {4, 64},
	}
	for _, s := range series {
		for _, bots := range []bool{false, true} {
			w := benchWeights(s.n, uint64(s.n))
			opt := benchOptions(s.teams, s.n, bots)
			b.Run(fmt.Sprintf("teams=%d/n=%d/bots=%v", s.teams, s.n, bots), func(b *testing.B) {
				benchSplit(b, w, opt)
			})
		}
	}
}

// BenchmarkSplitWeights splits the same numbers of players with weights of four shapes,
// side by side (benchstat -col /weights):
//   - decimal: BenchmarkSplit's, uniform reals in [0, 100);
//   - integer: the same weights rounded to whole numbers, what the seed's program and most
//     game servers send: many subsets share a sum, so many splits tie;
//   - equal: every weight 50, so every split with the same head counts ties;
//   - powers: 2^29, 2^28, ..., 2^(30-n): every subset sum differs, the heaviest player
//     outweighs all the others together.
func BenchmarkSplitWeights(b *testing.B) {
	shapes := []struct {
		name   string
		weight func(i int, decimal float64) float64
	}{
		{"decimal", func(_ int, x float64) float64 { return x }},
		{"integer", func(_ int, x float64) float64 { return math.Round(x) }},
		{"equal", func(int, float64) float64 { return 50 }},
		{"powers", func(i int, _ float64) float64 { return math.Ldexp(1, 29-i) }},
	}
	for _, s := range []struct{ teams, n int }{{2, 24}, {2, 32}, {2, 40}, {3, 16}, {3, 20}, {4, 16}, {4, 20}} {
		for _, bots := range []bool{false, true} {
			for _, shape := range shapes {
				w := benchWeights(s.n, uint64(s.n))
				for i, x := range w {
					w[i] = shape.weight(i, x)
				}
				opt := benchOptions(s.teams, s.n, bots)
				b.Run(fmt.Sprintf("teams=%d/n=%d/bots=%v/weights=%s", s.teams, s.n, bots, shape.name), func(b *testing.B) {
					benchSplit(b, w, opt)
				})
			}
		}
	}
}

// benchSplit runs Split and reports whether the last answer was exact and, beside the wall
// time, the CPU time of the process per split (cpu-ns/op, all threads, the GC's included),
// which other jobs on a shared machine inflate far less.
func benchSplit(b *testing.B, w []float64, opt SplitOptions) {
	var r SplitResult
	cpu := cpuTime(b)
	for b.Loop() {
		var err error
		if r, err = Split(w, opt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
	exact := 0.0
	if r.Exact {
		exact = 1
	}
	b.ReportMetric(exact, "exact")
}

// cpuTime is the CPU time the process has used (user and system), in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return u.Utime.Nano() + u.Stime.Nano()
}

// The heuristic alone at sizes where the optimum is known, with its gap: at 24..40 players
// (2 teams) and 20 (3-4 teams) the exact search's optimum; at 64 and 128 a planted perfect
// split. gap/total is the mean over the instances of the extra difference as a fraction of
// the sum of the totals (ratio objective, with bots: the balance lost).
func BenchmarkSplitHeuristic(b *testing.B) {
	const instances = 8
	for _, s := range []struct{ teams, n int }{{2, 24}, {2, 32}, {2, 40}, {2, 64}, {2, 128}, {3, 20}, {3, 64}, {4, 20}, {4, 64}} {
		for _, bots := range []bool{false, true} {
			var probs []*problem
			var gap float64
			for i := range instances {
				planted := s.n > 40
				w := benchWeights(s.n, uint64(1000*s.n+i))
				if planted {
					w = plantedWeights(s.n, s.teams, uint64(1000*s.n+i))
				}
				st, err := benchOptions(s.teams, s.n, bots).validate(w)
				if err != nil {
					b.Fatal(err)
				}
				p := newSplitProblem(w, st)
				probs = append(probs, p)
				switch {
				case planted:
					gap += measureGap(p, func(top *shortlist) { top.insert(0, 0, make([]uint8, len(w))) })
				case s.teams == 2:
					gap += measureGap(p, p.mitm)
				default:
					gap += measureGap(p, func(top *shortlist) { p.bnb(top, 1e9) })
				}
			}
			b.Run(fmt.Sprintf("teams=%d/n=%d/bots=%v", s.teams, s.n, bots), func(b *testing.B) {
				i := 0
				for b.Loop() {
					top := &shortlist{k: DefaultCandidates, sym: true, dedupe: true}
					probs[i%instances].heuristic(top)
					i++
				}
				b.ReportMetric(gap/instances, "gap/total")
			})
		}
	}
}

// BenchmarkRebalance rebalances teams that are playing: n humans dealt unevenly over the
// teams (the heaviest on team 0) and n/8 joiners to place, then swaps until none helps;
// with the process's CPU time per rebalance (cpu-ns/op), as benchSplit.
func BenchmarkRebalance(b *testing.B) {
	for _, s := range []struct{ teams, n int }{{2, 16}, {2, 64}, {4, 32}, {4, 128}} {
		w := benchWeights(s.n+s.n/8, uint64(s.n))
		w, unplaced := w[:s.n], w[s.n:]
		teams := make([]Roster, s.teams)
		for i, x := range w {
			j := i % s.teams
			if x > 70 {
				j = 0
			}
			teams[j].Players = append(teams[j].Players, x)
		}
		b.Run(fmt.Sprintf("teams=%d/n=%d", s.teams, s.n), func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				r, err := Rebalance(teams, unplaced, RebalanceOptions{})
				if err != nil || r.Swaps == 0 {
					b.Fatalf("%d swaps, %v", r.Swaps, err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
