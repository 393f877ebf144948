package queuesvc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// receiver is a webhook receiver that answers each delivery with answer(seq, attempt) and
// records the events it acknowledged.
type receiver struct {
	mu       sync.Mutex
	attempts map[int64]int
	acked    []int64
	changed  chan struct{} // closed, and replaced, at each delivery
}

// loopback allows the test receivers (httptest servers on 127.0.0.1) past the webhook policy.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

func newReceiver(t *testing.T, secret string, answer func(seq int64, attempt int) int) (*receiver, string) {
	rc := &receiver{attempts: map[int64]int{}, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := client.VerifyWebhook(secret, r.Header, body, queuetest.T0, time.Hour); err != nil {
			t.Errorf("delivery %s: %v", r.Header.Get(queue.DeliveryHeader), err)
		}
		var ev struct{ Seq int64 }
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Error(err)
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.attempts[ev.Seq]++
		status := answer(ev.Seq, rc.attempts[ev.Seq])
		if status/100 == 2 {
			rc.acked = append(rc.acked, ev.Seq)
		}
		close(rc.changed)
		rc.changed = make(chan struct{})
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func (rc *receiver) snapshot() ([]int64, map[int64]int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	attempts := make(map[int64]int, len(rc.attempts))
	for k, v := range rc.attempts {
		attempts[k] = v
	}
	return append([]int64(nil), rc.acked...), attempts
}

// await waits until cond holds of the deliveries so far (10 s at most), waking at each one.
func (rc *receiver) await(t *testing.T, what string, cond func(acked []int64, attempts map[int64]int) bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		acked, attempts := rc.snapshot()
		rc.mu.Lock()
		changed := rc.changed
		rc.mu.Unlock()
		if cond(acked, attempts) {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("after 10 s: %s (acknowledged %v, attempts %v)", what, acked, attempts)
		}
	}
}

// A queue that matches at every tick wakes the deliverer at every tick; the retry of a failed
// delivery still comes when its backoff is over, not never (each wake-up used to start the
// backoff again, so a busy queue's receiver that failed once was never called again).
func TestWebhookRetriesWhileTheQueueIsBusy(t *testing.T) {
	t.Parallel()
	const secret = "a-secret-of-16-bytes-or-more"
	rc, url := newReceiver(t, secret, func(seq int64, attempt int) int {
		if seq == 1 && attempt <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	// The backoff (200 ms, then 400) is longer than the 50 ms between the ticks that match.
	f := newFixture(t, queuesvc.Config{WebhookBackoff: 200 * time.Millisecond, WebhookAllow: loopback})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.Webhook = &queue.Webhook{URL: url, Secret: secret} })
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel")
	timerSet(t, f.clock, time.Second, "the deliverer's wait for its round")
	n := 0
	busy := func(ticks int) { // each tick matches two new tickets and wakes the deliverer
		for range ticks {
			for range 2 {
				n++
				if _, _, err := f.svc.CreateTicket(ctx, solo("duel", fmt.Sprintf("p%d", n))); err != nil {
					t.Fatal(err)
				}
			}
			f.advance(t, 50*time.Millisecond)
		}
	}
	attempt := func(k int) func([]int64, map[int64]int) bool {
		return func(_ []int64, a map[int64]int) bool { return a[1] == k }
	}
	busy(1)
	rc.await(t, "no first attempt at event 1", attempt(1))
	timerSet(t, f.clock, 200*time.Millisecond, "the first retry")
	busy(4) // four ticks that match: the retry comes at the fourth all the same
	rc.await(t, "event 1 was not tried again 200 ms after, with a tick every 50 ms", attempt(2))
	timerSet(t, f.clock, 400*time.Millisecond, "the second retry")
	busy(8)
	rc.await(t, "the first event was not delivered on its third attempt", func(acked []int64, a map[int64]int) bool {
		return len(acked) > 0 && acked[0] == 1 && a[1] == 3
	})
}

// A receiver that refuses an event for good (a 4xx) or keeps failing it does not hold back the
// events after it: the event is dead-lettered and the cursor moves on.
func TestWebhookDeadLetters(t *testing.T) {
	t.Parallel()
	const secret = "a-secret-of-16-bytes-or-more"
	for _, tc := range []struct {
		name         string
		answer       int
		wantAttempts int
	}{
		{"a 400 at once", http.StatusBadRequest, 1},
		{"a 410 at once", http.StatusGone, 1},
		{"a 503 after the attempts", http.StatusServiceUnavailable, 3},
		{"a 429 after the attempts", http.StatusTooManyRequests, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc, url := newReceiver(t, secret, func(seq int64, attempt int) int {
				if seq == 1 {
					return tc.answer
				}
				return http.StatusNoContent
			})
			f := newFixture(t, queuesvc.Config{WebhookBackoff: 10 * time.Millisecond, WebhookMaxAttempts: 3, WebhookAllow: loopback})
			ctx := context.Background()
			f.queue(t, func(q *queue.Queue) { q.Webhook = &queue.Webhook{URL: url, Secret: secret} })
			for _, id := range []string{"a", "b", "c"} {
				tk, _, err := f.svc.CreateTicket(ctx, solo("duel", id))
				if err != nil {
					t.Fatal(err)
				}
				if id == "a" {
					if _, err := f.svc.CancelTicket(ctx, tk.ID); err != nil { // event 1
						t.Fatal(err)
					}
				}
			}
			runService(t, f.svc) // b and c match: events 2 and 3
			for attempt := 1; attempt < tc.wantAttempts; attempt++ {
				rc.await(t, fmt.Sprintf("attempt %d at event 1", attempt), func(_ []int64, a map[int64]int) bool { return a[1] == attempt })
				waitTimer(t, f.clock, 10*time.Millisecond<<(attempt-1), fmt.Sprintf("retry %d of event 1", attempt))
			}
			rc.await(t, "events 2 and 3 were not delivered", func(acked []int64, _ map[int64]int) bool { return len(acked) == 2 })
			acked, attempts := rc.snapshot()
			if acked[0] != 2 || acked[1] != 3 || attempts[1] != tc.wantAttempts {
				t.Fatalf("acknowledged %v, event 1 tried %d times; want 2 and 3 after %d tries of 1", acked, attempts[1], tc.wantAttempts)
			}
			timerSet(t, f.clock, time.Second, "the deliverer's round after")
			if cur, _ := f.store.WebhookCursor(ctx, "duel"); cur != 3 {
				t.Fatalf("the cursor is at %d, want 3", cur)
			}
		})
	}
}

// An event that fails once it is older than WebhookMaxAge is dead-lettered at that failure.
func TestWebhookDeadLettersOldEvents(t *testing.T) {
	t.Parallel()
	const secret = "a-secret-of-16-bytes-or-more"
	rc, url := newReceiver(t, secret, func(seq int64, attempt int) int {
		if seq == 1 {
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	f := newFixture(t, queuesvc.Config{WebhookBackoff: 10 * time.Millisecond, WebhookMaxAge: time.Minute, WebhookAllow: loopback})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.Webhook = &queue.Webhook{URL: url, Secret: secret} })
	tk, _, _ := f.svc.CreateTicket(ctx, solo("duel", "a"))
	if _, err := f.svc.CancelTicket(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	runService(t, f.svc)
	ticked(t, f.clock, f.svc, "duel") // nothing to match: the deliverer waits for its round
	waitTimer(t, f.clock, time.Second, "the deliverer's first round")
	for attempt := 1; attempt <= 3; attempt++ {
		rc.await(t, fmt.Sprintf("attempt %d at event 1", attempt), func(_ []int64, a map[int64]int) bool { return a[1] == attempt })
		if attempt < 3 {
			waitTimer(t, f.clock, 10*time.Millisecond<<(attempt-1), fmt.Sprintf("retry %d", attempt))
		}
	}
	timerSet(t, f.clock, 40*time.Millisecond, "the third retry")
	if cur, _ := f.store.WebhookCursor(ctx, "duel"); cur != 0 {
		t.Fatalf("cursor %d while event 1 is young: it must be retried, not given up", cur)
	}
	f.clock.Advance(2 * time.Minute) // the third retry fails an event past WebhookMaxAge
	timerSet(t, f.clock, time.Second, "the deliverer's round after the dead letter")
	if cur, _ := f.store.WebhookCursor(ctx, "duel"); cur != 1 {
		t.Fatalf("the cursor is at %d, want past the old event", cur)
	}
}
