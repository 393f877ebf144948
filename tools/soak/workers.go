package main

// workers runs each ticket and each result on a goroutine of its own, reusing the
// goroutines that finished: a new goroutine's stack is grown (copied) several times over by
// its first HTTP request, and a reused one has it already. As many run at once as are
// given; an idle one waits for the next until stop.
type workers struct {
	idle chan func()
	done chan struct{}
}

func newWorkers() *workers { return &workers{idle: make(chan func()), done: make(chan struct{})} }

// goRun runs f on an idle goroutine, or on a new one when none is idle.
func (w *workers) goRun(f func()) {
	select {
	case w.idle <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	for {
		f()
		select {
		case f = <-w.idle:
		case <-w.done:
			return
		}
	}
}

// stop ends the idle goroutines (and each busy one once it is done).
func (w *workers) stop() { close(w.done) }
