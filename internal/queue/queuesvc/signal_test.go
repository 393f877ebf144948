package queuesvc_test

import (
	"sync"
	"time"
)

// signal wakes the tests waiting for a condition each time what the condition reads changes:
// they check it again then, instead of polling it.
type signal struct {
	mu sync.Mutex
	ch chan struct{} // closed at the next notify; nil until someone waits
}

// notify wakes every waiter: what their conditions read has changed.
func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// next is closed at the next notify.
func (s *signal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// await reports whether cond comes to hold within 10 s, checking it at each notify.
func (s *signal) await(cond func() bool) bool { return awaitEach(cond, s.next) }

// awaitEach reports whether cond comes to hold within 10 s, checking it again each time the
// channel next gives is closed. next is taken before cond is checked, so that no change
// between the check and the wait is missed.
func awaitEach(cond func() bool, next func() <-chan struct{}) bool {
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		ch := next()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-timeout.C:
			return false
		}
	}
}
