package queuetest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Clock is a fake clock for a queue service under test (clockwork's): it moves only when the
// test advances it, and it lets the test wait until a timer is set, so that the test advances
// it to the moment the service waits for (a webhook's retry, an allocator's backoff) once the
// service waits for it, never before. The leader's ticks need no such wait: Advance fires the
// timer of the next tick, and a tick that was under way meanwhile wakes its loop at once.
type Clock struct {
	*clockwork.FakeClock
	mu      sync.Mutex
	timers  []*timer      // set and not stopped: those due after Now are pending
	changed chan struct{} // closed, and replaced, when a timer is set
}

// NewClock is a Clock at t.
func NewClock(t time.Time) *Clock {
	return &Clock{FakeClock: clockwork.NewFakeClockAt(t), changed: make(chan struct{})}
}

var _ clockwork.Clock = (*Clock)(nil)

type timer struct {
	clockwork.Timer
	c   *Clock
	due time.Time
}

func (c *Clock) NewTimer(d time.Duration) clockwork.Timer {
	return c.track(c.FakeClock.NewTimer(d), d)
}

func (c *Clock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	return c.track(c.FakeClock.AfterFunc(d, f), d)
}

func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// track records a timer set d from now, once it is set.
func (c *Clock) track(t clockwork.Timer, d time.Duration) *timer {
	tt := &timer{Timer: t, c: c}
	c.set(tt, d)
	return tt
}

func (c *Clock) set(t *timer, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.due = c.Now().Add(d)
	if !slices.Contains(c.timers, t) {
		c.timers = append(c.timers, t)
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

func (t *timer) Reset(d time.Duration) bool {
	stopped := t.Timer.Reset(d)
	t.c.set(t, d)
	return stopped
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	t.c.timers = slices.DeleteFunc(t.c.timers, func(o *timer) bool { return o == t })
	t.c.mu.Unlock()
	return t.Timer.Stop()
}

// WaitTimer waits until a timer is set to fire at at (after Now), or ctx ends.
func (c *Clock) WaitTimer(ctx context.Context, at time.Time) error {
	for {
		c.mu.Lock()
		set := slices.ContainsFunc(c.timers, func(t *timer) bool { return t.due.Equal(at) })
		changed := c.changed
		c.mu.Unlock()
		if set {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AdvanceTo moves the clock on to at (never back).
func (c *Clock) AdvanceTo(at time.Time) {
	if d := at.Sub(c.Now()); d > 0 {
		c.Advance(d)
	}
}
