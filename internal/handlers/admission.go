package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Admission keeps the memory that compute requests and ticket creations hold at once under a
// budget, so that a burst of large requests (docs/performance.md, "Admission", has what 32
// concurrent 100,000-player matchmakes took without it) queues or is refused instead of taking
// the process over its container's limit, and keeps one caller's stalled requests from costing
// anyone else.
//
// A request's body is read before its work starts, under BodyTimeout, and is charged by the
// bytes that actually arrived as they arrive (to a reading budget of a quarter of Budget,
// beside it), never by the Content-Length it declares: three
// connections that declared 8 MiB and sent one byte used to hold 288 MiB of a 256 MiB budget
// until the read timeout, and every other key's ticket creation answered 503. Once the body
// is in, the request is charged its working estimate (bytesPerBodyByte a byte). What the
// budget cannot hold waits up to Wait for room, then gets 503 with Retry-After. A caller (its
// API key, else its address) has at most PerCaller such requests in flight; one more is
// answered 429 at once, so a client holding many slow connections holds only its own slots.
type Admission struct {
	// Budget is the bytes in-flight compute requests may hold together. 0: no memory budget
	// (the body deadline and the per-caller cap still hold).
	Budget int64
	// Wait is how long a request waits for room in the budget before it is refused.
	Wait time.Duration
	// PerCaller caps the admitted requests one caller has in flight. 0: DefaultAdmissionPerCaller.
	PerCaller int
	// BodyTimeout is how long a request's body may take to arrive. 0: DefaultBodyTimeout.
	BodyTimeout time.Duration
}

// Defaults of Admission's per-caller cap and body deadline.
const (
	// DefaultAdmissionPerCaller lets one game backend's key reach what one replica carries:
	// a creation is in flight while it waits for its group commit, which a tick's write can
	// hold up to about half a second (docs/performance.md, "Where the fixed-rate tail comes
	// from"), so one replica's 4,000 creations a second keep about 4,000 x 0.5 s = 2,000 in
	// flight. The old 128 refused one key from about 2,000 a second (issue 37). At the
	// least charge of 64 KiB these hold 128 MiB, half the default budget, so one key alone
	// cannot take all of it; stalled uploads are bounded apart (receivingShare).
	DefaultAdmissionPerCaller = 2048
	// DefaultBodyTimeout is ample for the largest body (8 MiB) at 1 MB/s.
	DefaultBodyTimeout = 10 * time.Second
)

// MaxTicketBodyBytes caps the body of a ticket or backfill creation, far below the compute
// requests' MaxBodyBytes: a ticket of 16 players and 64 regions is a few kilobytes; the rest
// is room for 32 attributes of up to 64-item lists.
const MaxTicketBodyBytes = 256 << 10

// bytesPerBodyByte is the heap a compute request holds at its peak per byte of its JSON body,
// with a margin: measured on /v1/matchmake, the largest, whose allocations over a request are
// mostly garbage before its end, so that its live heap, not what it allocates, is what a
// budget must hold (docs/performance.md, "Admission", has the figures and how they were
// taken). A 100,000-player body is 3.8 MB, so charging 12 admits five of them into a 256 MiB
// budget.
const bytesPerBodyByte = 12

// minRequestCost is the least a request is charged: its buffers, goroutine and answer.
const minRequestCost = 64 << 10

// readChunk is how much body a request reads between two charges while its body arrives.
const readChunk = 64 << 10

// receivingShare is the part of the reading budget one caller's bodies may hold while they
// arrive: an eighth, 128 bodies at the least charge with the default budget (the old
// per-caller cap). A backend's ticket bodies arrive whole in microseconds, so this bounds a
// client that stalls its uploads, not a busy one, whose requests wait for their work, not
// for their bodies, and are bounded by PerCaller.
const receivingShare = 8

// admitter is an Admission in force.
type admitter struct {
	// work is the budget of the requests being answered: each holds its working estimate.
	work pool
	// reading is the budget of the bodies being received, a quarter of Budget beside it:
	// each holds what its buffer holds. Separate, so that a request waiting for room in work
	// holds nothing of work, and those still receiving never wait behind it: neither waits
	// for the other.
	reading     pool
	maxBody     int64
	perCaller   int
	bodyTimeout time.Duration
	// receivingPerCaller caps the requests of one caller whose bodies are arriving: the
	// reading budget's receivingShare at the least charge (perCaller without a budget).
	receivingPerCaller int

	mu        sync.Mutex
	inFlight  map[string]int // admitted requests by caller
	receiving map[string]int // of those, the ones whose bodies are still arriving
}

// pool is one budget: a semaphore of size bytes (nil: no budget) and how long a request
// waits for room in it.
type pool struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration
}

func newAdmitter(a Admission, maxBody int64) *admitter {
	ad := &admitter{maxBody: maxBody, perCaller: a.PerCaller, bodyTimeout: a.BodyTimeout,
		inFlight: make(map[string]int), receiving: make(map[string]int)}
	if ad.perCaller <= 0 {
		ad.perCaller = DefaultAdmissionPerCaller
	}
	if ad.bodyTimeout <= 0 {
		ad.bodyTimeout = DefaultBodyTimeout
	}
	ad.receivingPerCaller = ad.perCaller
	if a.Budget > 0 {
		ad.work = pool{sem: semaphore.NewWeighted(a.Budget), size: a.Budget, wait: a.Wait}
		reading := max(a.Budget/4, minRequestCost)
		ad.reading = pool{sem: semaphore.NewWeighted(reading), size: reading, wait: a.Wait}
		ad.receivingPerCaller = min(ad.perCaller, max(1, int(reading/receivingShare/minRequestCost)))
	}
	return ad
}

// cost is a request's working charge for a body of contentLength bytes (-1: unknown, so the
// largest body allowed), never more than the whole budget, so that the largest request can
// always run alone.
func (a *admitter) cost(contentLength int64) int64 {
	if contentLength < 0 || contentLength > a.maxBody {
		contentLength = a.maxBody
	}
	return min(a.work.size, max(minRequestCost, contentLength*bytesPerBodyByte))
}

// charge is what one request holds of a pool; it only grows, up to the pool's size (so that
// the largest request can always proceed alone). waited is how long it has waited for room,
// all its raises together, which the pool's wait bounds.
type charge struct {
	p      *pool
	held   int64
	waited time.Duration
}

// to raises the charge to n bytes, waiting for the room up to what is left of the pool's
// wait; past it, 503.
func (c *charge) to(ctx context.Context, n int64) error {
	if c.p.sem == nil {
		return nil
	}
	n = min(n, c.p.size)
	more := n - c.held
	if more <= 0 {
		return nil
	}
	if !c.p.sem.TryAcquire(more) {
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, c.p.wait-c.waited)
		defer cancel()
		err := c.p.sem.Acquire(wctx, more)
		c.waited += time.Since(start)
		if err != nil {
			return apperr.Wrap(apperr.Unavailable, err,
				"the service is at its memory budget for large requests; retry after the Retry-After seconds")
		}
	}
	c.held = n
	return nil
}

func (c *charge) release() {
	if c.p.sem != nil && c.held > 0 {
		c.p.sem.Release(c.held)
	}
	c.held = 0
}

// admit reserves a request's working charge for a body of contentLength bytes and returns the
// function that gives it back; a nil admitter admits everything.
func (a *admitter) admit(ctx context.Context, contentLength int64) (release func(), err error) {
	if a == nil {
		return func() {}, nil
	}
	c := &charge{p: &a.work}
	if err := c.to(ctx, a.cost(contentLength)); err != nil {
		return nil, err
	}
	return c.release, nil
}

// admitted is one request's hold on the admission: its caller's in-flight slot, its
// receiving slot while its body arrives, and its charges to the two budgets.
type admitted struct {
	a                 *admitter
	caller            string
	receiving         bool // the receiving slot is still held
	received, working charge
}

// enter takes one of caller's in-flight slots and one of its receiving slots.
func (a *admitter) enter(caller string) (*admitted, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inFlight[caller] >= a.perCaller {
		return nil, apperr.New(apperr.TooManyRequests,
			"at most %d compute or ticket-creation requests of one caller may be in flight at once on this replica (MATCHMAKER_ADMISSION_PER_KEY); retry when one has been answered, or raise it", a.perCaller)
	}
	if a.receiving[caller] >= a.receivingPerCaller {
		return nil, apperr.New(apperr.TooManyRequests,
			"at most %d bodies of one caller may be arriving at once on this replica (an eighth of the reading quarter of MATCHMAKER_MEMORY_BUDGET); send each body whole, or raise the budget", a.receivingPerCaller)
	}
	a.inFlight[caller]++
	a.receiving[caller]++
	return &admitted{a: a, caller: caller, receiving: true, received: charge{p: &a.reading}, working: charge{p: &a.work}}, nil
}

// arrived gives back the receiving slot once the body is in (at most once; release gives it
// back if not).
func (h *admitted) arrived() {
	if !h.receiving {
		return
	}
	h.receiving = false
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	decrement(h.a.receiving, h.caller)
}

// release gives back the charges and the slots; a nil hold (no admitter) holds nothing.
func (h *admitted) release() {
	if h == nil {
		return
	}
	h.received.release()
	h.working.release()
	h.arrived()
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	decrement(h.a.inFlight, h.caller)
}

// arriving is the number of admitted requests, of every caller, whose bodies are arriving.
func (a *admitter) arriving() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.receiving {
		n += c
	}
	return float64(n)
}

func decrement(counts map[string]int, caller string) {
	if counts[caller]--; counts[caller] <= 0 {
		delete(counts, caller)
	}
}

// admitBody admits r: a slot of its caller, its body read under the body deadline and charged
// as it arrives, then its working charge. On success r's body has been replaced by the bytes
// read, and the hold's release gives back the slot and the charge (a nil admitter admits
// with a nil hold). limit caps the body below the server's (0: the server's).
func (a *admitter) admitBody(w http.ResponseWriter, r *http.Request, limit int64) (*admitted, error) {
	if limit > 0 {
		if err := capBody(w, r, limit); err != nil {
			return nil, err
		}
	}
	if a == nil {
		return nil, nil
	}
	h, err := a.enter(callerOf(r))
	if err != nil {
		w.Header().Set("Retry-After", "1")
		return nil, err
	}
	body, err := a.readBody(w, r, &h.received)
	if err == nil {
		h.arrived()
		// The body's bytes move from the reading budget to the working estimate, which
		// counts them; until the request is admitted to work they stay charged where they are.
		h.working.waited = h.received.waited
		err = h.working.to(r.Context(), a.cost(int64(len(body))))
		h.received.release()
	}
	if err != nil {
		h.release()
		return nil, err
	}
	r.Body = &admittedBody{data: body}
	r.ContentLength = int64(len(body))
	return h, nil
}

// admittedBody is a body admission has read whole: decode takes its bytes as they are
// instead of copying them again.
type admittedBody struct {
	data []byte
	off  int
}

func (b *admittedBody) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

func (b *admittedBody) Close() error { return nil }

// take is the rest of the body, which it then no longer holds.
func (b *admittedBody) take() []byte {
	rest := b.data[b.off:]
	b.off = len(b.data)
	return rest
}

// readBody reads r's body, raising c to the memory its buffer holds as the bytes arrive. The
// client has BodyTimeout to send it, not counting the waits for room in the budget.
func (a *admitter) readBody(w http.ResponseWriter, r *http.Request, c *charge) ([]byte, error) {
	if err := c.to(r.Context(), minRequestCost); err != nil {
		return nil, err
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	rc := http.NewResponseController(w)
	size := int64(readChunk)
	if r.ContentLength >= 0 {
		size = min(r.ContentLength+1, size) // a declared length is not trusted for an allocation
	}
	buf := make([]byte, 0, size)
	left := a.bodyTimeout
	for {
		// Not every writer can set a deadline (a test's recorder cannot); the server's read
		// timeout then bounds the body instead.
		start := time.Now()
		_ = rc.SetReadDeadline(start.Add(left))
		var n int
		var err error
		buf, n, err = readUpTo(buf, r.Body, readChunk)
		left -= time.Since(start)
		if err == nil {
			err = c.to(r.Context(), max(minRequestCost, int64(cap(buf))))
		} else {
			err = bodyError(err, a.bodyTimeout)
		}
		if err != nil {
			// The rest of the body will not be read: without this, net/http would try to
			// read it after the answer, to keep the connection, and wait for a stalled client.
			w.Header().Set("Connection", "close")
			return nil, err
		}
		if n < readChunk {
			_ = rc.SetReadDeadline(time.Time{}) // the body is in; the server sets the next request's deadline
			return buf, nil
		}
	}
}

// readUpTo appends to b up to n bytes read from r, short only at r's end (then a nil error),
// growing b only when it is full: a body whose declared length b was made for is read into it
// without a copy.
func readUpTo(b []byte, r io.Reader, n int) ([]byte, int, error) {
	read := 0
	for read < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(max(cap(b), bytes.MinRead), n-read))
		}
		m, err := r.Read(b[len(b):min(cap(b), len(b)+n-read)])
		b, read = b[:len(b)+m], read+m
		if err == io.EOF {
			return b, read, nil
		}
		if err != nil {
			return b, read, err
		}
	}
	return b, read, nil
}

// capBody refuses a declared length over limit and caps what is read at limit.
func capBody(w http.ResponseWriter, r *http.Request, limit int64) error {
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	return nil
}

func tooLarge(limit int64) error {
	return &apperr.Error{Code: apperr.TooLarge,
		Message: fmt.Sprintf("the body is larger than %d bytes", limit),
		Fields:  []apperr.FieldError{{Field: "body", Message: fmt.Sprintf("must be at most %d bytes", limit)}}}
}

func bodyError(err error, timeout time.Duration) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return tooLarge(tooBig.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &apperr.Error{Code: apperr.Invalid, Message: "the body did not arrive in time", Err: err,
			Fields: []apperr.FieldError{{Field: "body", Message: "must arrive within " + timeout.String()}}}
	}
	return &apperr.Error{Code: apperr.Invalid, Message: "the body could not be read", Err: err,
		Fields: []apperr.FieldError{{Field: "body", Message: "could not be read"}}}
}

// withAdmission admits a request that is not a compute request (a ticket creation) as the
// compute requests are, to the same budget, with its body capped at limit bytes.
func withAdmission(a *admitter, limit int64, logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			held, err := a.admitBody(w, r, limit)
			if err != nil {
				writeError(w, r, logger, err)
				return
			}
			defer held.release()
			next.ServeHTTP(w, r)
		})
	}
}
