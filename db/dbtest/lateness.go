package dbtest

import "time"

// Control starts a timer of d, a control beside a call bounded by a deadline of d started at
// the same moment; the function it returns waits for the timer and says when it fired, since
// Control was called. On a loaded host every timer fires late, the call's deadline as the
// control: a test bounds the call by the control's time plus a small slack rather than by d
// plus a guess at the host's lateness.
func Control(d time.Duration) func() time.Duration {
	start := time.Now()
	fired := make(chan time.Duration, 1)
	time.AfterFunc(d, func() { fired <- time.Since(start) })
	var at time.Duration
	var done bool
	return func() time.Duration {
		if !done {
			at, done = <-fired, true
		}
		return at
	}
}
