package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// computation is one compute request (matchmake, a team split, assign, rebalance, advantage)
// once decoded and checked: the weights it still needs from the ratings service, whether it is
// heavy enough to wait for a gate slot, the algorithm to run and time, and the answer to write.
type computation struct {
	stored  *storedWeights              // weights the request left out; nil when none
	heavy   bool                        // waits for a slot of the gate
	run     func() error                // the algorithm: what observe's elapsed time measures
	observe func(elapsed time.Duration) // records the run in the domain metrics
	respond func(w http.ResponseWriter, r *http.Request)
}

// handleCompute is the skeleton every compute endpoint shares: decode the body, plan the
// computation (validate and resolve the request, reporting every fault at once), read the
// weights it leaves out, take a gate slot if the work is heavy, run and time the algorithm,
// observe, and answer. Each endpoint only writes its plan.
func handleCompute[Req any](logger *slog.Logger, svc *ratings.Service, gate *workGate,
	plan func(req *Req) (computation, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held, err := gate.admission.admitBody(w, r, 0)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		defer held.release()
		if err := spendForSize(r, int(r.ContentLength)); err != nil {
			writeError(w, r, logger, err)
			return
		}
		req, err := decode[Req](r)
		var c computation
		if err == nil {
			c, err = plan(&req)
		}
		if err == nil && c.stored != nil {
			err = c.stored.load(r.Context(), svc)
		}
		if err == nil {
			err = c.execute(r.Context(), gate)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		c.respond(w, r)
	})
}

// execute runs the algorithm inside the gate. The slot is given back by a defer, so a panic in
// the algorithm cannot keep it; the answer is written after the slot is free.
func (c *computation) execute(ctx context.Context, gate *workGate) error {
	leave, err := gate.enter(ctx, c.heavy)
	if err != nil {
		return err
	}
	defer leave()
	start := time.Now()
	if err := c.run(); err != nil {
		return err
	}
	c.observe(time.Since(start))
	return nil
}

// workGate bounds how many heavy computations run at once (team splits and rebalance
// placements, see teamSearchIsHeavy). An exact 2-team search of n humans by meet in the
// middle holds two lists of about 2^(n/2) subset sums and masks, twice over: about 38 MB at 40
// humans. The search pools that scratch, but each search running at the same moment needs its
// own, so without a bound a burst of 40-player splits would take memory in proportion to the
// burst (a hundred at once, 3.8 GB); and a 3-4 team branch and bound can keep a core busy
// until its node budget runs out. With the gate, at most cap(slots) heavy searches run at once (Limits.HeavySearches),
// so their scratch stays under cap x 38 MB. The others wait for a slot, holding only their
// decoded request; a request whose context ends while it waits (the client went away, a
// deadline passed) stops waiting and gets 503, having computed nothing. Light work does not
// take a slot, so a 16-player split never waits behind 40-player ones.
//
// The gate also holds the admission control of every compute request (see Admission): a
// request's body is read and charged as it arrives, then it is admitted by its size, and only
// then may it wait for a slot.
type workGate struct {
	slots     chan struct{}
	admission *admitter // nil: every request is admitted
}

func newWorkGate(n int) *workGate {
	return &workGate{slots: make(chan struct{}, max(1, n))}
}

// enter takes a slot for heavy work (none for light work) and returns the function that
// gives it back.
func (g *workGate) enter(ctx context.Context, heavy bool) (leave func(), err error) {
	if !heavy {
		return func() {}, nil
	}
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, nil
	case <-ctx.Done():
		return nil, apperr.Wrap(apperr.Unavailable, ctx.Err(),
			"the request ended while waiting for a slot among the large team searches running; retry later")
	}
}
