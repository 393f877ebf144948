package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// sample is the state of the run at one moment: the clients' counters (totals since the
// start), the database's, and each replica's.
type sample struct {
	Mark      string          `json:"mark,omitempty"` // start, arrivals end, end; "" for a periodic one
	T         float64         `json:"t_s"`            // seconds since the arrivals started
	Created   int64           `json:"created"`
	Waiting   int64           `json:"waiting"`
	Ended     int64           `json:"ended"` // tickets whose end a client saw
	Matches   int64           `json:"matches"`
	Posted    int64           `json:"results_posted"`
	Errors    int64           `json:"errors"`
	Errors5xx int64           `json:"errors_5xx"`
	DB        dbSample        `json:"db"`
	Ticks     float64         `json:"ticks"`      // the queue's ticks, summed over the replicas' metrics
	Unscraped int             `json:"unscraped"`  // replicas whose /metrics did not answer: their last ticks count is used
	SoakCPU   float64         `json:"soak_cpu_s"` // the soak's own user + system time since it started
	Searching float64         `json:"searching"`  // the leader's searching tickets
	Replicas  []replicaSample `json:"replicas"`
}

type sampler struct {
	l   *load
	out io.Writer

	mu        sync.Mutex
	samples   []sample
	lastTicks []float64 // per replica, the last ticks count read
}

func newSampler(l *load, out io.Writer) *sampler { return &sampler{l: l, out: out} }

// every takes a sample each d until the returned function is called.
func (s *sampler) every(d time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.take("")
			}
		}
	}()
	return func() { cancel(); <-done }
}

// take samples everything, keeps it, and prints a progress line.
func (s *sampler) take(mark string) sample {
	l := s.l
	now := time.Now()
	sm := sample{Mark: mark, T: now.Sub(l.started).Seconds(), Created: l.created.Load(), Waiting: l.waiting.Load(),
		Ended: l.ended.Load(), Posted: l.posted.Load(), Errors: l.errCount.Load(), Errors5xx: l.err5xx.Load(),
		Searching: -1}
	l.mu.Lock()
	sm.Matches = int64(len(l.matches))
	l.mu.Unlock()
	sm.DB = l.db.sample(context.Background())
	sm.Replicas = make([]replicaSample, len(l.reps))
	var wg sync.WaitGroup
	for i, r := range l.reps {
		wg.Go(func() { sm.Replicas[i] = r.sampleQueue(l.queue) })
	}
	wg.Wait()
	sm.SoakCPU = readCPU(os.Getpid())
	s.mu.Lock()
	if s.lastTicks == nil {
		s.lastTicks = make([]float64, len(sm.Replicas))
	}
	// A counter: a replica that did not answer keeps its last count, and the ticks it made
	// meanwhile count in the next sample that reads it.
	for i, r := range sm.Replicas {
		if r.Ticks >= 0 {
			s.lastTicks[i] = r.Ticks
		} else if r.Goroutines < 0 {
			sm.Unscraped++
		}
		sm.Ticks += s.lastTicks[i]
		if r.Leader {
			sm.Searching = r.Searching
		}
	}
	var prev *sample
	if n := len(s.samples); n > 0 {
		prev = &s.samples[n-1]
	}
	line := progressLine(prev, &sm)
	s.samples = append(s.samples, sm)
	s.mu.Unlock()
	fmt.Fprintln(s.out, line)
	return sm
}

func (s *sampler) all() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}

// progressLine is one line of the run's progress: rates since the previous sample.
func progressLine(prev, cur *sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: t=%6.1fs", cur.T)
	if cur.Mark != "" {
		fmt.Fprintf(&b, " [%s]", cur.Mark)
	}
	if prev != nil && cur.T > prev.T {
		dt := cur.T - prev.T
		fmt.Fprintf(&b, " creates %.0f/s ended %.0f/s", float64(cur.Created-prev.Created)/dt, float64(cur.Ended-prev.Ended)/dt)
		if cur.DB.Transactions >= 0 && prev.DB.Transactions >= 0 {
			x := float64(cur.DB.Transactions - prev.DB.Transactions)
			fmt.Fprintf(&b, " xact %.0f/s", x/dt)
			if ticks := cur.Ticks - prev.Ticks; ticks > 0 {
				fmt.Fprintf(&b, " (%.0f/tick, %.0f ticks)", x/ticks, ticks)
			}
		}
	}
	if cur.Unscraped > 0 {
		fmt.Fprintf(&b, " [/metrics of %d replicas unanswered]", cur.Unscraped)
	}
	fmt.Fprintf(&b, " | waiting %d searching %.0f matches %d results %d errors %d (5xx %d) db conns %d |",
		cur.Waiting, cur.Searching, cur.Matches, cur.Posted, cur.Errors, cur.Errors5xx, cur.DB.Connections)
	for i, r := range cur.Replicas {
		lead := ""
		if r.Leader {
			lead = "*"
		}
		fmt.Fprintf(&b, " r%d%s %.0f MiB %d gor", i, lead, float64(r.RSSKiB)/1024, r.Goroutines)
	}
	return b.String()
}

// loadAvg is the first field of /proc/loadavg: the machine's load over the last minute.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
