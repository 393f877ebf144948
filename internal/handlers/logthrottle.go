package handlers

import (
	"context"
	"log/slog"
	"sync/atomic"

	"golang.org/x/time/rate"
)

// throttledOutages passes on at most a line a second (after a burst) of the server's
// "dependency unavailable" warnings, counting the ones it drops in the next it passes:
// an outage, or a replica shedding load at its waiter cap, answers thousands of requests a
// second with 503s, and one warning each buried everything else in the log (6,248 lines in a
// soak). The 503s themselves are counted by the HTTP metrics.
type throttledOutages struct {
	slog.Handler
	state *outageThrottle
}

type outageThrottle struct {
	limit   *rate.Limiter
	dropped atomic.Int64
}

// outageMessage is the message writeError logs a 503 with.
const outageMessage = "dependency unavailable"

func newThrottledOutages(h slog.Handler) throttledOutages {
	return throttledOutages{Handler: h, state: &outageThrottle{limit: rate.NewLimiter(1, 10)}}
}

func (t throttledOutages) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == outageMessage {
		if !t.state.limit.Allow() {
			t.state.dropped.Add(1)
			return nil
		}
		if n := t.state.dropped.Swap(0); n > 0 {
			r.AddAttrs(slog.Int64("similar_lines_dropped", n))
		}
	}
	return t.Handler.Handle(ctx, r)
}

func (t throttledOutages) WithAttrs(as []slog.Attr) slog.Handler {
	return throttledOutages{Handler: t.Handler.WithAttrs(as), state: t.state}
}

func (t throttledOutages) WithGroup(name string) slog.Handler {
	return throttledOutages{Handler: t.Handler.WithGroup(name), state: t.state}
}
