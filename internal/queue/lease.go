package queue

import (
	"errors"
	"time"
)

// LeaseStore is a Store whose leadership is a lease that the leader renews by calling Lead
// (the db package's: a session advisory lock, and a lease another replica breaks when its
// leader stops renewing it). The tick loop calls Lead at least every LeaseRenewal, even
// between the ticks of a slow queue, and the webhook deliverer posts only within LeaseLeft.
type LeaseStore interface {
	Store
	// LeaseLeft is how long this process may still act as the queue's leader without a
	// renewal: 0 when it does not lead the queue. It takes no round trip.
	LeaseLeft(queue string) time.Duration
	// LeaseRenewal is how often the leader's Lead must be called for its lease to hold.
	LeaseRenewal() time.Duration
}

// ErrOutboxHandover is wrapped by WebhookCursor's error for a new leader whose predecessor's
// lease has not run out yet: the predecessor may still be posting the queue's events, so the
// new leader waits before it posts any (otherwise the receiver gets them twice).
var ErrOutboxHandover = errors.New("the previous leader's lease has not run out")

// ErrTakeoverRefused is wrapped by Lead's error when the queue's leader stopped renewing its
// lease but its session could not be ended (the database role lacks the right to).
var ErrTakeoverRefused = errors.New("the hung leader's session cannot be ended")
