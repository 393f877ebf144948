package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// A queue's match function (its definition's match_function) is a studio's own HTTP server
// that the queue's leader POSTs its pool to at each tick (a MatchFunctionRequest, signed as
// webhook deliveries are) and that answers the matches it proposes (a MatchFunctionAnswer).
// MatchFunctionHandler serves that protocol from a plain function: a studio writes how it
// matches, the handler refuses what the service did not sign, decodes the pool, gives the
// function the call's deadline and writes its answer. docs/match-functions.md has the rest.

// MatchFunc decides a tick's matches from its pool. The service checks every match it
// returns on its own (tickets of the pool, each once, the queue's teams and sizes,
// compositions) and drops those that fail, with their reason; returning no match leaves the
// tickets searching. ctx ends when the request's deadline is due (its deadline less its now,
// from the call's arrival), after which the answer is not read.
// An error answers a 500 with its text: the call failed, and the queue's on_failure decides
// the tick.
type MatchFunc func(ctx context.Context, req *MatchFunctionRequest) ([]ProposedMatch, error)

// DefaultMaxMatchFunctionRequest bounds a match function request's body: a pool of the most
// tickets a call carries (max_pool 100,000) of a few players each fits.
const DefaultMaxMatchFunctionRequest = 128 << 20

// MatchFunctionServer is MatchFunctionHandler's handler, with its limits open to change.
type MatchFunctionServer struct {
	Secret string // the match function's secret, as the queue's definition has it
	Func   MatchFunc
	// MaxBody bounds the request's body (0: DefaultMaxMatchFunctionRequest); a larger one is
	// a 413.
	MaxBody int64
	// Tolerance is how far a request's signature time may be from Now (0:
	// DefaultWebhookTolerance).
	Tolerance time.Duration
	Now       func() time.Time // nil: time.Now
}

// MatchFunctionHandler serves a queue's match function from fn: a POST whose signature under
// secret does not verify is a 401, a body that is not a MatchFunctionRequest a 400 (a 413
// past DefaultMaxMatchFunctionRequest), an error of fn a 500 with its text; otherwise a 200
// MatchFunctionAnswer of fn's matches.
func MatchFunctionHandler(secret string, fn MatchFunc) http.Handler {
	return &MatchFunctionServer{Secret: secret, Func: fn}
}

func (s *MatchFunctionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeFunctionProblem(w, http.StatusMethodNotAllowed, "a match function is called with POST")
		return
	}
	limit := s.MaxBody
	if limit <= 0 {
		limit = DefaultMaxMatchFunctionRequest
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeFunctionProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is over %d bytes", limit))
			return
		}
		writeFunctionProblem(w, http.StatusBadRequest, "the request's body could not be read: "+err.Error())
		return
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if err := VerifyWebhook(s.Secret, r.Header, body, now(), s.Tolerance); err != nil {
		writeFunctionProblem(w, http.StatusUnauthorized, err.Error())
		return
	}
	req, err := decodeMatchFunctionRequest(body)
	if err != nil {
		writeFunctionProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), budget(req, now()))
	defer cancel()
	matches, err := s.Func(ctx, req)
	if err != nil {
		writeFunctionProblem(w, http.StatusInternalServerError, "the match function failed: "+err.Error())
		return
	}
	if matches == nil {
		matches = []ProposedMatch{} // the service reads a missing list as an unreadable answer
	}
	out, err := json.Marshal(MatchFunctionAnswer{Matches: matches})
	if err != nil {
		writeFunctionProblem(w, http.StatusInternalServerError, "the match function's answer cannot be written: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// budget is how long the function has: from the request's now to its deadline, both on the
// leader's clock (a function host's clock off by seconds neither cuts nor stretches it); from
// this host's now to the deadline when the request gives no now.
func budget(req *MatchFunctionRequest, now time.Time) time.Duration {
	if req.Now.IsZero() {
		return req.Deadline.Sub(now)
	}
	return req.Deadline.Sub(req.Now)
}

// decodeMatchFunctionRequest reads a request leniently (the service may add members), but
// refuses one without the members a function cannot do without.
func decodeMatchFunctionRequest(body []byte) (*MatchFunctionRequest, error) {
	var req MatchFunctionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("the body is not a MatchFunctionRequest: %v", err)
	}
	switch {
	case req.Queue == "":
		return nil, errors.New(`the request has no "queue"`)
	case req.Teams < 1 && (req.TeamDefs == nil || len(*req.TeamDefs) == 0):
		return nil, errors.New(`the request has no "teams"`)
	case req.Pool == nil:
		return nil, errors.New(`the request has no "pool"`)
	}
	return &req, nil
}

// writeFunctionProblem answers a problem+json document, as the service answers its errors.
func writeFunctionProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail})
}
