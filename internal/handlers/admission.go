package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"

	"matchmaker/internal/apperr"
)

// Admission keeps the memory that compute requests hold at once under a budget, so that a
// burst of large requests (32 concurrent 100,000-player matchmakes took 1.46 GB before it)
// queues or is refused instead of taking the process over its container's limit. A request
// reserves an estimate of its memory, by its body's size, before its body is read; what the
// budget cannot hold waits up to Wait for room, then gets 503 with Retry-After.
type Admission struct {
	// Budget is the bytes in-flight compute requests may hold together. 0: no admission
	// control.
	Budget int64
	// Wait is how long a request waits for room in the budget before it is refused.
	Wait time.Duration
}

// bytesPerBodyByte is the heap a compute request holds at its peak per byte of its JSON body,
// with a margin. /v1/matchmake, the largest, allocates 29 bytes per body byte over a request
// (111 MB for a 100,000-player, 3.8 MB body), but much of it is garbage before the end: in
// TestAdmissionKeepsABurstOfLargeRequestsInBudget two such requests at a time grew the heap's
// live objects by about 34 MB each, 9 bytes per body byte. Charging 12 admits five of them
// into a 256 MiB budget.
const bytesPerBodyByte = 12

// minRequestCost is the least a request is charged: its buffers, goroutine and answer.
const minRequestCost = 64 << 10

// admitter is an Admission in force.
type admitter struct {
	sem     *semaphore.Weighted
	budget  int64
	wait    time.Duration
	maxBody int64
}

func newAdmitter(a Admission, maxBody int64) *admitter {
	if a.Budget <= 0 {
		return nil
	}
	return &admitter{sem: semaphore.NewWeighted(a.Budget), budget: a.Budget, wait: a.Wait, maxBody: maxBody}
}

// cost is a request's charge for a body of contentLength bytes (-1: unknown, so the largest
// body allowed), never more than the whole budget, so that the largest request can always run
// alone.
func (a *admitter) cost(contentLength int64) int64 {
	if contentLength < 0 || contentLength > a.maxBody {
		contentLength = a.maxBody
	}
	return min(a.budget, max(minRequestCost, contentLength*bytesPerBodyByte))
}

// admit reserves a request's charge and returns the function that gives it back; a nil
// admitter admits everything.
func (a *admitter) admit(ctx context.Context, contentLength int64) (release func(), err error) {
	if a == nil {
		return func() {}, nil
	}
	n := a.cost(contentLength)
	if !a.sem.TryAcquire(n) {
		wctx, cancel := context.WithTimeout(ctx, a.wait)
		defer cancel()
		if err := a.sem.Acquire(wctx, n); err != nil {
			return nil, apperr.Wrap(apperr.Unavailable, err,
				"the service is at its memory budget for large requests; retry after the Retry-After seconds")
		}
	}
	return func() { a.sem.Release(n) }, nil
}

// withAdmission charges a request that is not a compute request (a ticket creation) to the
// same budget, so that a flood of them queues or is refused with the compute requests rather
// than beside them.
func withAdmission(a *admitter, logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if a == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			release, err := a.admit(r.Context(), r.ContentLength)
			if err != nil {
				writeError(w, r, logger, err)
				return
			}
			defer release()
			next.ServeHTTP(w, r)
		})
	}
}
