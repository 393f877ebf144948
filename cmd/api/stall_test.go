package main

import (
	"sync"
	"time"
)

// stallProbe measures how late this process's timers fire, all along a fault test: the
// program under test runs in the same process, so its deadlines fire as late as the probe's.
// A request's latency bound is then its deadline, the slack, and the stalls the probe saw
// while the request was out, rather than a slack large enough for any load the machine
// might carry (docs/performance.md, "Stalls the tests allow for").
type stallProbe struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	late []stall
}

// stall is one of the probe's timers: when it fired, and how late.
type stall struct {
	at   time.Time
	late time.Duration
}

// probeEvery is the probe's timer: short enough to see a stall of a tenth of a deadline.
const probeEvery = 20 * time.Millisecond

func startStallProbe() *stallProbe {
	p := &stallProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		timer := time.NewTimer(probeEvery)
		defer timer.Stop()
		for armed := time.Now(); ; armed = time.Now() {
			select {
			case <-p.stop:
				return
			case <-timer.C:
			}
			now := time.Now()
			if late := now.Sub(armed) - probeEvery; late > time.Millisecond {
				p.mu.Lock()
				p.late = append(p.late, stall{at: now, late: late})
				p.mu.Unlock()
			}
			timer.Reset(probeEvery)
		}
	}()
	return p
}

// during is how long the probe's timers were held back, in all, over [from, to]: the stalls
// that ended within it or began before its end.
func (p *stallProbe) during(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sum time.Duration
	for _, s := range p.late {
		if !s.at.Before(from) && !s.at.Add(-s.late).After(to) {
			sum += s.late
		}
	}
	return sum
}

func (p *stallProbe) close() {
	close(p.stop)
	<-p.done
}
