package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Options are the pool's size and its calls' deadlines. The zero value takes the defaults.
type Options struct {
	// Timeout bounds every call, the wait for a connection included: a call that has not
	// finished by then fails with apperr.Unavailable, and its connection is closed (pgx
	// closes a connection whose call ran out of time, and asks the server to cancel the
	// statement). Default DefaultTimeout.
	Timeout time.Duration
	// RebuildTimeout bounds the long calls (NewLongOp): those that read or rewrite a game
	// type's whole history. Default DefaultRebuildTimeout.
	RebuildTimeout time.Duration
	// MaxConns is the pool's size when the URL sets no pool_max_conns. Default
	// DefaultMaxConns, whatever the machine's cores: a replica's share of the database's
	// max_connections is the operator's choice, not the node's.
	MaxConns int
	// DetectPooler makes Open look for a pooler in transaction mode in front of the URL
	// (TransactionPooled, pooler.go): a few round trips on connections of its own. Found, the
	// pool uses no named prepared statements, and Connect wants a Startup.SessionURL.
	DetectPooler bool
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
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	return o
}

// An Op is a kind of call a store makes (Call): its name, for the in-flight counts and the
// messages, and its deadline. Make each once, in a package-level variable.
type Op struct {
	id   int
	name string
	long bool // bounded by Options.RebuildTimeout, not Timeout
}

// maxOps bounds the Ops a process defines, so that a DB counts its calls in a fixed array.
const maxOps = 64

// opNames are the names of the Ops made so far, by id.
var opNames struct {
	sync.Mutex
	names []string
}

// NewOp makes an Op with the ordinary deadline (Options.Timeout).
func NewOp(name string) Op { return newOp(name, false) }

// NewLongOp makes an Op with the long deadline (Options.RebuildTimeout).
func NewLongOp(name string) Op { return newOp(name, true) }

func newOp(name string, long bool) Op {
	opNames.Lock()
	defer opNames.Unlock()
	if len(opNames.names) == maxOps {
		panic("db: more than maxOps kinds of call")
	}
	opNames.names = append(opNames.names, name)
	return Op{id: len(opNames.names) - 1, name: name, long: long}
}

func (o Op) String() string { return o.name }

// errTimedOut is the cause of a call's context that ran out of its time.
var errTimedOut = errors.New("db: the store's call deadline passed")

// Background is the context of work a store does for callers that do not wait on it
// themselves (a batch of results written for several): it ends at the ordinary call deadline,
// or when the pool is shut down by force. TimedOut tells the first from the second.
func (d *DB) Background() (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(d.calls.abort, d.calls.opts.Timeout, errTimedOut)
}

// TimedOut reports whether ctx, made by Call or Background, ended at its deadline.
func TimedOut(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errTimedOut) }

// calls bounds and counts the stores' calls, and cancels them all when the pool is shut down
// by force.
type calls struct {
	opts     Options
	abort    context.Context // done once a shutdown gives up waiting
	abortNow context.CancelFunc
	inFlight [maxOps]atomic.Int64
}

func newCalls(o Options) *calls {
	c := &calls{opts: o.withDefaults()}
	c.abort, c.abortNow = context.WithCancel(context.Background())
	return c
}

// Call begins a call of a store: its context ends at the deadline for o, or when the pool is
// shut down by force, whichever is first. The returned function ends the call; given the
// call's error it says, for one that ran out of time, that the database did not answer in
// time (Unavailable).
func (d *DB) Call(ctx context.Context, o Op) (context.Context, func(*error)) {
	return d.calls.start(ctx, o)
}

func (c *calls) start(ctx context.Context, o Op) (context.Context, func(*error)) {
	d := c.opts.Timeout
	if o.long {
		d = c.opts.RebuildTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d, errTimedOut)
	stop := context.AfterFunc(c.abort, cancel)
	c.inFlight[o.id].Add(1)
	return ctx, func(err *error) {
		if *err != nil && ctx.Err() != nil {
			*err = c.ended(ctx, o, d, *err)
		}
		stop()
		cancel()
		c.inFlight[o.id].Add(-1)
	}
}

// ended rewrites the error of a call whose context ended: Unavailable, saying why.
func (c *calls) ended(ctx context.Context, o Op, d time.Duration, err error) error {
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
	case TimedOut(ctx):
		return apperr.Wrap(apperr.Unavailable, cause, fmt.Sprintf("db: %s: the database did not answer within %s", o, d))
	}
	return MapError(err, o.String())
}

// running describes the calls in flight, e.g. "2 record result, 1 ratings", or "none".
func (c *calls) running() string {
	opNames.Lock()
	names := opNames.names
	opNames.Unlock()
	var parts []string
	for id, name := range names {
		if n := c.inFlight[id].Load(); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, name))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
