package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Options are the store's deadlines. The zero value takes the defaults.
type Options struct {
	// Timeout bounds every call, the wait for a connection included: a call that has not
	// finished by then fails with apperr.Unavailable, and its connection is closed (pgx
	// closes a connection whose call ran out of time, and asks the server to cancel the
	// statement). Default DefaultTimeout.
	Timeout time.Duration
	// RebuildTimeout bounds Rebuild, which reads and rewrites a game type's whole history.
	// Default DefaultRebuildTimeout.
	RebuildTimeout time.Duration
	// Committers is how many batches of results are written at once, each on a connection
	// of its own (see commit.go). Default DefaultCommitters; negative turns group commit
	// off: each result is written in a transaction of its own, by its caller.
	Committers int
	// MaxConns is the pool's size when the URL sets no pool_max_conns. Default
	// DefaultMaxConns, whatever the machine's cores: a replica's share of the database's
	// max_connections is the operator's choice, not the node's.
	MaxConns int
}

const (
	// DefaultTimeout is Options.Timeout's default: far above a healthy call (milliseconds),
	// short enough that a client's retry still makes sense.
	DefaultTimeout = 3 * time.Second
	// DefaultRebuildTimeout is Options.RebuildTimeout's default.
	DefaultRebuildTimeout = 10 * time.Minute
	// DefaultConnectTimeout bounds opening one connection (TCP, TLS, authentication) when the
	// URL sets no connect_timeout. pgxpool's own default is two minutes, during which a
	// connection being opened to a server that does not answer holds a place in the pool.
	DefaultConnectTimeout = 5 * time.Second
)

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RebuildTimeout <= 0 {
		o.RebuildTimeout = DefaultRebuildTimeout
	}
	if o.Committers == 0 {
		o.Committers = DefaultCommitters
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	return o
}

// op names a store call, for the in-flight counts and the messages.
type op int

const (
	opRecordResult op = iota
	opRatings
	opPlayerRatings
	opLeaderboard
	opBotMean
	opBias
	opPolicy
	opSetMutator
	opRebuild
	opHistory
	opTunings
	opSaveTunings
	opPing
	opStoredResult
	opDeleteResult
	numOps
)

var opNames = [numOps]string{"record result", "ratings", "player ratings", "leaderboard", "bot mean", "bias",
	"policy", "set mutator", "rebuild", "history", "tunings", "save tunings", "ping",
	"stored result", "delete result"}

func (o op) String() string { return opNames[o] }

// errTimedOut is the cause of a call's context that ran out of the store's time.
var errTimedOut = errors.New("db: the store's call deadline passed")

// calls bounds and counts the store's calls, and cancels them all when the store is closed
// by force.
type calls struct {
	opts     Options
	abort    context.Context // done once a shutdown gives up waiting
	abortNow context.CancelFunc
	inFlight [numOps]atomic.Int64
}

func newCalls(o Options) *calls {
	c := &calls{opts: o.withDefaults()}
	c.abort, c.abortNow = context.WithCancel(context.Background())
	return c
}

// start begins a call: its context ends at the store's deadline for o, or when the store is
// closed by force, whichever is first. The returned function ends the call; given the call's
// error it says, for one that ran out of time, that the database did not answer in time.
func (c *calls) start(ctx context.Context, o op) (context.Context, func(*error)) {
	d := c.opts.Timeout
	if o == opRebuild || o == opHistory || o == opDeleteResult {
		d = c.opts.RebuildTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d, errTimedOut)
	stop := context.AfterFunc(c.abort, cancel)
	c.inFlight[o].Add(1)
	return ctx, func(err *error) {
		if *err != nil && ctx.Err() != nil {
			*err = c.ended(ctx, o, d, *err)
		}
		stop()
		cancel()
		c.inFlight[o].Add(-1)
	}
}

// ended rewrites the error of a call whose context ended: Unavailable, saying why.
func (c *calls) ended(ctx context.Context, o op, d time.Duration, err error) error {
	switch apperr.CodeOf(err) {
	case apperr.Unavailable, apperr.Internal:
	default:
		return err // the call's own answer (a conflict, an invalid result) came first
	}
	cause := err
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Err != nil {
		cause = ae.Err
	}
	switch {
	case c.abort.Err() != nil:
		return apperr.Wrap(apperr.Unavailable, cause, "db: "+o.String()+": the store was closed")
	case errors.Is(context.Cause(ctx), errTimedOut):
		return apperr.Wrap(apperr.Unavailable, cause, fmt.Sprintf("db: %s: the database did not answer within %s", o, d))
	}
	return mapError(err, o.String())
}

// running describes the calls in flight, e.g. "2 record result, 1 ratings", or "none".
func (c *calls) running() string {
	var parts []string
	for o := range numOps {
		if n := c.inFlight[o].Load(); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, o))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
