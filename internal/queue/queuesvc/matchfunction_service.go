package queuesvc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A match function's call, the Service's side (the leader's is queueleader/matchfunction.go's): the
// request sent through the Outbound, counted by outcome.

// sendPool makes the call, within the function's timeout, and counts it by outcome; detail
// says why it failed, in words. It touches no runner state: a shadow call runs beside the
// tick.
func (s *Service) sendPool(ctx context.Context, mf queue.MatchFunction, req queue.FunctionRequest) ([]queue.ProposedMatch, string, error) {
	cctx, cancel := context.WithTimeout(ctx, mf.Timeout)
	defer cancel()
	start := s.clock.Now()
	var proposals []queue.ProposedMatch
	err := errNoOutbound
	if s.outbound != nil {
		proposals, err = s.outbound.CallFunction(cctx, mf, req)
	}
	outcome, detail := functionOutcome(err, cctx.Err(), mf.Timeout)
	s.metrics.FunctionCalled(outcome, s.clock.Since(start))
	if err != nil {
		err = fmt.Errorf("%s: %w", outcome, err)
	}
	return proposals, detail, err
}

// functionOutcome names a call's outcome, and says why it failed in words.
func functionOutcome(err, ctxErr error, timeout time.Duration) (outcome, detail string) {
	var refused *queue.RefusedError
	switch {
	case err == nil:
		return callOK, ""
	case errors.Is(ctxErr, context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return callTimeout, fmt.Sprintf("timed out after %d ms", timeout.Milliseconds())
	case errors.As(err, &refused):
		detail := "answered " + strings.TrimSpace(fmt.Sprintf("%d %s", refused.Status, refused.Text))
		if refused.Detail != "" {
			detail += ": " + refused.Detail
		}
		return callRefused, detail
	case errors.Is(err, queue.ErrFunctionUnreadable):
		return callUnreadable, err.Error()
	}
	return callError, "unreachable: " + err.Error()
}
