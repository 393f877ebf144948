package sim

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
)

// Comparison is a scenario's runs: one per configuration, and the sweep.
type Comparison struct {
	Results   []*Result
	Summaries []Summary
	// Sweep has, per configuration with a clock-based widening, one point per sweep factor
	// (and factor 1, the configuration itself), in factor order.
	Sweep []SweepPoint
}

// SweepPoint is one run of the trade-off sweep.
type SweepPoint struct {
	Configuration string
	Factor        float64 // the widening reached Factor times later than configured
	Summary       Summary
}

// job is one run to do.
type job struct {
	cf     Configuration
	factor float64 // 0: a configuration's own run
	res    *Result // kept for a configuration's own run only
	sum    Summary
	err    error
}

// Compare runs every configuration of a validated scenario and its sweep, up to workers at
// a time. Every run is independent and deterministic, so the order in which they finish
// changes nothing. progress, if not nil, is called (from the workers, one at a time) with
// the matches made so far over all runs and the total to make.
func Compare(ctx context.Context, sc *Scenario, workers int, progress func(done, total int)) (*Comparison, error) {
	var jobs []*job
	for _, cf := range sc.Configurations {
		jobs = append(jobs, &job{cf: cf})
	}
	for _, cf := range sc.Configurations {
		if !sweepable(cf) {
			continue
		}
		for _, factor := range sc.Sweep {
			if factor != 1 {
				jobs = append(jobs, &job{cf: slowed(cf, factor), factor: factor})
			}
		}
	}
	if err := runAll(ctx, sc, jobs, workers, progress); err != nil {
		return nil, err
	}
	c := &Comparison{}
	own := map[string]*job{}
	for _, j := range jobs[:len(sc.Configurations)] {
		c.Results = append(c.Results, j.res)
		c.Summaries = append(c.Summaries, j.sum)
		own[j.cf.Name] = j
	}
	rest := jobs[len(sc.Configurations):]
	for _, cf := range sc.Configurations {
		if !sweepable(cf) || len(sc.Sweep) == 0 {
			continue
		}
		points := []SweepPoint{{Configuration: cf.Name, Factor: 1, Summary: own[cf.Name].sum}}
		for _, factor := range sc.Sweep {
			if factor == 1 {
				continue
			}
			points = append(points, SweepPoint{Configuration: cf.Name, Factor: factor, Summary: rest[0].sum})
			rest = rest[1:]
		}
		// In factor order, so the curve is drawn from the fastest widening to the slowest.
		slices.SortStableFunc(points, func(a, b SweepPoint) int { return cmp.Compare(a.Factor, b.Factor) })
		c.Sweep = append(c.Sweep, points...)
	}
	return c, nil
}

// sweepable reports whether a configuration's widening runs on the clock.
func sweepable(cf Configuration) bool {
	if cf.Matcher == "none" {
		return false
	}
	e := cf.expansion()
	return len(e.Steps) > 0 || e.Widening.EverySeconds > 0
}

// slowed is the configuration with its expansion reached factor times later.
func slowed(cf Configuration, factor float64) Configuration {
	e := cf.expansion().slower(factor)
	cf.Name += " x" + strconv.FormatFloat(factor, 'g', -1, 64)
	if len(e.Steps) > 0 {
		cf.Expansions, cf.Widening = &Expansions{Interval: e.Steps}, nil
	} else {
		w := e.Widening
		cf.Expansions, cf.Widening = nil, &w
	}
	return cf
}

// runAll runs the jobs, up to workers at a time, and returns the first error in job order.
func runAll(ctx context.Context, sc *Scenario, jobs []*job, workers int, progress func(done, total int)) error {
	total := sc.Matches * len(jobs)
	var mu sync.Mutex
	done := make([]int, len(jobs))
	sum := 0
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for i := range next {
				j := jobs[i]
				var report func(int)
				if progress != nil {
					report = func(n int) {
						mu.Lock()
						sum += n - done[i]
						done[i] = n
						progress(sum, total)
						mu.Unlock()
					}
				}
				res, err := Run(ctx, sc, j.cf, report)
				if err != nil {
					j.err = err
					continue
				}
				// A sweep's run is only a point of the curve: its summary is enough.
				j.sum = Summarize(res)
				if j.factor == 0 {
					j.res = res
				}
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, j := range jobs {
		if j.err != nil {
			return j.err
		}
	}
	return nil
}
