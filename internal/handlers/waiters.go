package handlers

import (
	"net/http"
	"sync"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// WaitLimits bound the requests that wait (event streams, and long-polls of a ticket) that a
// replica holds open: each costs a goroutine and buffers, however cheap its share of the
// queue's events is. Zero fields take the defaults.
type WaitLimits struct {
	PerReplica int // all callers together; over it: 503 with Retry-After. Default 10,000.
	PerCaller  int // one API key (or one address without keys); over it: 429. Default 2,000.
}

// Defaults of WaitLimits.
const (
	DefaultWaitersPerReplica = 10_000
	DefaultWaitersPerCaller  = 2_000
)

// waiters counts the open waits, in all and per caller.
type waiters struct {
	limits WaitLimits

	mu       sync.Mutex
	total    int
	byCaller map[string]int
}

func newWaiters(l WaitLimits) *waiters {
	if l.PerReplica <= 0 {
		l.PerReplica = DefaultWaitersPerReplica
	}
	if l.PerCaller <= 0 {
		l.PerCaller = DefaultWaitersPerCaller
	}
	return &waiters{limits: l, byCaller: make(map[string]int)}
}

// enter admits one more wait of the request's caller, or says why not; call the returned
// function when the wait ends.
func (ws *waiters) enter(w http.ResponseWriter, r *http.Request) (leave func(), err error) {
	caller := callerOf(r)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	switch {
	case ws.byCaller[caller] >= ws.limits.PerCaller:
		w.Header().Set("Retry-After", "1")
		return nil, apperr.New(apperr.TooManyRequests,
			"this caller has %d event streams and long-polls open on this replica, the most it may (MATCHMAKER_MAX_WAITERS_PER_KEY): close one, share one stream between tickets, or raise it", ws.limits.PerCaller)
	case ws.total >= ws.limits.PerReplica:
		return nil, apperr.New(apperr.Unavailable,
			"this replica holds %d event streams and long-polls, the most it may (MATCHMAKER_MAX_WAITERS): try again, or another replica", ws.limits.PerReplica)
	}
	ws.total++
	ws.byCaller[caller]++
	var once sync.Once
	return func() {
		once.Do(func() {
			ws.mu.Lock()
			defer ws.mu.Unlock()
			ws.total--
			if ws.byCaller[caller]--; ws.byCaller[caller] == 0 {
				delete(ws.byCaller, caller)
			}
		})
	}, nil
}
