package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Failed authentications are limited per client address and logged. Without it, 3,000 bad
// keys in half a second were 3,000 quiet 401s and no log line. Each failure spends a token of
// its address's bucket and is logged at warn level ("auth: failed") with the address and the
// first 12 hex digits of the SHA-256 of what was presented, never the key itself; so is each
// failure that empties the bucket. While the bucket is empty, a failure is answered 429 with
// Retry-After instead of 401, and not logged. A valid key is still served: clients behind one
// proxy or NAT share an address, and one misconfigured client must not lock the others out.
// (Keys are secrets of 32 random bytes, which no rate of guessing finds.)

// FailedAuthLimit is the bucket of failed authentications per client address: 20 at once,
// then one a second.
var FailedAuthLimit = RateLimit{PerSecond: 1, Burst: 20}

const scopeFailedAuth Scope = "failed-auth"

type failedAuth struct {
	lim    *limiter
	logger *slog.Logger
}

func newFailedAuth(limit RateLimit, logger *slog.Logger) *failedAuth {
	return &failedAuth{lim: newLimiter(RateLimits{scopeFailedAuth: limit}), logger: logger}
}

// addressOf is a request's client address (the TCP peer's; no forwarding header is trusted).
func addressOf(r *http.Request) string {
	return strings.TrimPrefix(callerOfAddress(r), "ip:")
}

// refuse answers a failed authentication: 429 while r's address has no failure left (true),
// else false for the caller to answer 401 (after failed).
func (f *failedAuth) refuse(w http.ResponseWriter, r *http.Request) bool {
	wait := f.lim.empty("ip:"+addressOf(r), scopeFailedAuth)
	if wait <= 0 {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	writeError(w, r, f.logger, apperr.New(apperr.TooManyRequests,
		"too many failed authentications from this address; retry after the Retry-After seconds"))
	return true
}

// failed spends a token of r's address for a failed authentication and logs it.
func (f *failedAuth) failed(r *http.Request, scope Scope) {
	addr := addressOf(r)
	ok, limit, remaining, _ := f.lim.take("ip:"+addr, scopeFailedAuth)
	presented := ""
	if _, token, found := strings.Cut(r.Header.Get("Authorization"), " "); found && strings.TrimSpace(token) != "" {
		sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
		presented = hex.EncodeToString(sum[:6])
	}
	if ok {
		f.logger.WarnContext(r.Context(), "auth: failed", "remote", addr, "key_sha256_prefix", presented,
			"scope", string(scope), "method", r.Method, "path", r.URL.Path, "request_id", requestIDFrom(r.Context()))
	}
	if !ok || remaining < 1 {
		f.logger.WarnContext(r.Context(), "auth: failures from this address are rate limited", "remote", addr,
			"limit_per_s", limit.PerSecond, "burst", limit.Burst)
	}
}
