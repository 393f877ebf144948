package wakeup

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

func head(seq int64) func() (int64, error) { return func() (int64, error) { return seq, nil } }

// waiting starts a Wait for q's events after after (its head at after) and returns once it is
// registered.
func waiting(t *testing.T, ws *Waiters, ctx context.Context, q string, after int64) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		woken, err := ws.Wait(ctx, q, after, head(after), nil)
		if err == nil && !woken {
			err = errors.New("returned unwoken")
		}
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); ws.Len(q) == 0; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never registered")
		}
	}
	return done
}

func mustReturn(t *testing.T, done <-chan error, want error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, want) {
			t.Fatalf("Wait = %v, want %v", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return")
	}
}

// A notification wakes the queue's waiters that have not read its events, and no other.
func TestNotifyWakesThoseBehind(t *testing.T) {
	var ws Waiters
	ctx := context.Background()
	done := waiting(t, &ws, ctx, "q", 4)
	ws.Notify("q", 4) // late: the waiter has read event 4
	ws.Notify("other", 9)
	if n := ws.Len("q"); n != 1 {
		t.Fatalf("a late notification woke the waiter: %d left", n)
	}
	ws.Notify("q", 5)
	mustReturn(t, done, nil)
	if n := ws.Len("q"); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}

func TestWakeAllAndTheContext(t *testing.T) {
	var ws Waiters
	ctx, cancel := context.WithCancel(context.Background())
	a, b := waiting(t, &ws, context.Background(), "a", 1), waiting(t, &ws, context.Background(), "b", 1)
	ws.WakeAll()
	mustReturn(t, a, nil)
	mustReturn(t, b, nil)
	c := waiting(t, &ws, ctx, "a", 1)
	cancel()
	mustReturn(t, c, context.Canceled)
}

// Wait reads the head after registering: an event the head shows returns at once, and so does
// one notified between the registration and the read.
func TestWaitReadsTheHeadOnceRegistered(t *testing.T) {
	var ws Waiters
	ctx := context.Background()
	if woken, err := ws.Wait(ctx, "q", 3, head(4), nil); !woken || err != nil {
		t.Fatalf("an event after 3 exists: %v %v", woken, err)
	}
	notifying := func() (int64, error) { ws.Notify("q", 4); return 3, nil }
	if woken, err := ws.Wait(ctx, "q", 3, notifying, nil); !woken || err != nil {
		t.Fatalf("notified between the registration and the read: %v %v", woken, err)
	}
	fired := make(chan time.Time, 1)
	fired <- time.Time{}
	if woken, err := ws.Wait(ctx, "q", 3, head(3), func() <-chan time.Time { return fired }); woken || err != nil {
		t.Fatalf("the poll fired: %v %v, want unwoken", woken, err)
	}
	broken := errors.New("broken")
	if _, err := ws.Wait(ctx, "q", 3, func() (int64, error) { return 0, broken }, nil); !errors.Is(err, broken) {
		t.Fatalf("head's error: %v", err)
	}
}
