// Package wakeup holds the waiters of a process's queue.Store.WaitEvents calls and wakes them
// when their queue's events move on: the one mechanism of both stores (the memory store
// notifies as it appends an event, the Postgres store as its listener hears a commit's).
package wakeup

import (
	"context"
	"sync"
	"time"
)

// Waiters are the WaitEvents calls under way, by queue. The zero Waiters is ready to use.
type Waiters struct {
	mu      sync.Mutex
	waiters map[string]map[*waiter]struct{}
}

// waiter is one WaitEvents call; ch is closed to wake it.
type waiter struct {
	after int64
	ch    chan struct{}
}

// Wait returns once head, read after the call is registered (so that an event notified
// after the read wakes it), is after after, or once a notification of the queue's events
// after after wakes it: woken true. It returns woken false when the channel poll gives, asked
// after the registration too (nil: never), fires first, and ctx's error when ctx ends. head's
// error ends the wait.
func (ws *Waiters) Wait(ctx context.Context, queue string, after int64, head func() (int64, error), poll func() <-chan time.Time) (woken bool, err error) {
	w := ws.add(queue, after)
	defer ws.remove(queue, w)
	var tick <-chan time.Time
	if poll != nil {
		tick = poll()
	}
	last, err := head()
	switch {
	case ctx.Err() != nil:
		return false, ctx.Err()
	case err != nil:
		return false, err
	case last > after:
		return true, nil
	}
	select {
	case <-w.ch:
		return true, nil
	case <-tick:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (ws *Waiters) add(queue string, after int64) *waiter {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := &waiter{after: after, ch: make(chan struct{})}
	if ws.waiters == nil {
		ws.waiters = make(map[string]map[*waiter]struct{})
	}
	q, ok := ws.waiters[queue]
	if !ok {
		q = make(map[*waiter]struct{})
		ws.waiters[queue] = q
	}
	q[w] = struct{}{}
	return w
}

// remove forgets a waiter that returned (woken or not).
func (ws *Waiters) remove(queue string, w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if q, ok := ws.waiters[queue]; ok {
		delete(q, w)
		if len(q) == 0 {
			delete(ws.waiters, queue)
		}
	}
}

// Notify wakes the queue's waiters that wait for events up to seq, its last event's: one that
// comes late, for events a waiter has read already, wakes no one.
func (ws *Waiters) Notify(queue string, seq int64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	q := ws.waiters[queue]
	for w := range q {
		if w.after < seq {
			close(w.ch)
			delete(q, w)
		}
	}
	if len(q) == 0 {
		delete(ws.waiters, queue)
	}
}

// WakeAll wakes every waiter, when notifications may have been missed or will stop coming.
func (ws *Waiters) WakeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, q := range ws.waiters {
		for w := range q {
			close(w.ch)
		}
	}
	clear(ws.waiters)
}

// Len is how many calls wait for the queue's events.
func (ws *Waiters) Len(queue string) int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.waiters[queue])
}
