package handlers

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// RateLimit is a token bucket: PerSecond requests a second on average, Burst at once.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// RateLimits is a bucket per caller and route class (the scope the route needs). A caller is
// its API key; without one (open endpoints, auth off), its remote IP address. A class with no
// entry is not limited.
type RateLimits map[Scope]RateLimit

// DefaultRateLimits let one key reach what one replica carries (the buckets are a replica's):
// they stop a runaway loop past the replica's capacity, not a studio's one backend at launch.
// The old 500 match requests a second refused one backend key at an eighth of a replica's
// 4,000 tickets a second (issue 37). Sized from docs/performance.md's maxima on 2 cores: a
// ticket costs its backend two match requests (its creation and one read of the ticket) at
// up to 8,000 creations a second, a match one read and one result (results at most about
// 1,700 a second); the burst, two seconds of requests, lets a backend catch up after a stall.
// Operators tune them with MATCHMAKER_RATE_LIMITS.
func DefaultRateLimits() RateLimits {
	return RateLimits{
		ScopeMatch:   {PerSecond: 16000, Burst: 32000},
		ScopeResults: {PerSecond: 2000, Burst: 4000},
		ScopeRead:    {PerSecond: 8000, Burst: 16000},
		ScopeAdmin:   {PerSecond: 20, Burst: 40},
	}
}

// ParseRateLimits reads MATCHMAKER_RATE_LIMITS: comma-separated SCOPE=RATE/s[:BURST] entries,
// e.g. "match=200/s:400,results=100/s,admin=off". Scopes not named keep their defaults; "off"
// removes a class's limit; the burst defaults to twice the rate.
func ParseRateLimits(s string) (RateLimits, error) {
	limits := DefaultRateLimits()
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, spec, ok := strings.Cut(entry, "=")
		scope := Scope(strings.TrimSpace(name))
		if !ok || !slicesContains(allScopes, scope) {
			return nil, fmt.Errorf("rate limit %q: want SCOPE=RATE/s[:BURST] with SCOPE one of read, match, results, admin", entry)
		}
		if spec == "off" {
			delete(limits, scope)
			continue
		}
		rateSpec, burstSpec, hasBurst := strings.Cut(spec, ":")
		perSecond, err := strconv.ParseFloat(strings.TrimSuffix(rateSpec, "/s"), 64)
		if err != nil || !strings.HasSuffix(rateSpec, "/s") || !(perSecond > 0) || math.IsInf(perSecond, 0) {
			return nil, fmt.Errorf("rate limit %q: the rate must be a positive number followed by /s", entry)
		}
		burst := int(math.Ceil(2 * perSecond))
		if hasBurst {
			if burst, err = strconv.Atoi(burstSpec); err != nil || burst < 1 {
				return nil, fmt.Errorf("rate limit %q: the burst must be a whole number from 1", entry)
			}
		}
		limits[scope] = RateLimit{PerSecond: perSecond, Burst: burst}
	}
	return limits, nil
}

func slicesContains(list []Scope, s Scope) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// limiter holds the buckets. Buckets idle for longer than it takes to refill are dropped by a
// sweep at most once a minute, so a stream of one-off callers cannot grow it without bound.
type limiter struct {
	limits RateLimits
	mu     sync.Mutex
	bucket map[bucketKey]*bucketEntry
	swept  time.Time
	now    func() time.Time
}

type bucketKey struct {
	caller string
	scope  Scope
}

type bucketEntry struct {
	lim  *rate.Limiter
	used time.Time
}

func newLimiter(limits RateLimits) *limiter {
	return &limiter{limits: limits, bucket: make(map[bucketKey]*bucketEntry), now: time.Now}
}

// take spends a token of caller's bucket for scope; when there is none it says how long until
// there is. remaining is what is left of the burst after the take.
func (l *limiter) take(caller string, scope Scope) (ok bool, limit RateLimit, remaining int, retryAfter time.Duration) {
	limit, limited := l.limits[scope]
	if !limited {
		return true, limit, 0, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute {
		for k, e := range l.bucket {
			if now.Sub(e.used) > time.Duration(float64(l.limits[k.scope].Burst)/l.limits[k.scope].PerSecond*float64(time.Second))+time.Minute {
				delete(l.bucket, k)
			}
		}
		l.swept = now
	}
	key := bucketKey{caller, scope}
	e, found := l.bucket[key]
	if !found {
		e = &bucketEntry{lim: rate.NewLimiter(rate.Limit(limit.PerSecond), limit.Burst)}
		l.bucket[key] = e
	}
	e.used = now
	r := e.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, limit, 0, d
	}
	return true, limit, int(e.lim.TokensAt(now)), 0
}

// empty is how long until caller's bucket for scope has a token, 0 when it has one now
// (or has never been used). It spends nothing.
func (l *limiter) empty(caller string, scope Scope) time.Duration {
	limit, limited := l.limits[scope]
	if !limited {
		return 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e, found := l.bucket[bucketKey{caller, scope}]
	if !found {
		return 0
	}
	tokens := e.lim.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / limit.PerSecond * float64(time.Second))
}

// takeN spends n more tokens of caller's bucket for scope, beside the one take spent (at most
// the burst less that one, so that the largest request can run on a full bucket); when there
// are not enough it spends none and says how long until there are.
func (l *limiter) takeN(caller string, scope Scope, n int) (ok bool, limit RateLimit, retryAfter time.Duration) {
	limit, limited := l.limits[scope]
	if n = min(n, limit.Burst-1); !limited || n <= 0 {
		return true, limit, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	key := bucketKey{caller, scope}
	e, found := l.bucket[key]
	if !found {
		e = &bucketEntry{lim: rate.NewLimiter(rate.Limit(limit.PerSecond), limit.Burst)}
		l.bucket[key] = e
	}
	e.used = now
	r := e.lim.ReserveN(now, n)
	if d := r.DelayFrom(now); !r.OK() || d > 0 {
		r.CancelAt(now)
		return false, limit, d
	}
	return true, limit, 0
}

// computeBytesPerToken is the body a compute request may carry for each token of its rate
// limit: the middleware takes one token before the body is read, and a larger body pays the
// rest once it is in (about 100 players of /v1/matchmake a token: a 100,000-player request
// costs some 900). Counting requests alone let six loops of 100,000-player matchmakes from
// one key, within the limit, push every other caller's requests to 0.4-0.8 s.
const computeBytesPerToken = 4 << 10

// spendKey carries, in a rate-limited request's context, the function that spends more of its
// caller's tokens.
type spendKey struct{}

// spendForSize charges a compute request the tokens its body's size costs beyond the one
// already taken; a nil error when the route is not limited.
func spendForSize(r *http.Request, bodyBytes int) error {
	spend, ok := r.Context().Value(spendKey{}).(func(n int) error)
	if !ok {
		return nil
	}
	return spend((bodyBytes+computeBytesPerToken-1)/computeBytesPerToken - 1)
}

// callerOf is who a request's bucket belongs to: its API key's name (set by requireScope),
// else its remote address.
func callerOf(r *http.Request) string { return callerIn(r.Context(), r) }

// callerIn is callerOf with the key taken from ctx, r's context to be.
func callerIn(ctx context.Context, r *http.Request) string {
	if key := keyOf(ctx); key != nil {
		return key.callerID()
	}
	return callerOfAddress(r)
}

// callerOfAddress is "ip:" and the request's remote address without its port.
func callerOfAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}

// limitRate answers 429 with Retry-After (ok false) when the caller's bucket for scope is
// empty, tells every limited answer its budget (RateLimit-Limit, -Remaining, -Reset: the IETF
// draft's fields), and returns ctx, r's context to be, with the function that spends more of
// the bucket (spendForSize).
func limitRate(w http.ResponseWriter, r *http.Request, ctx context.Context, l *limiter, scope Scope, d Deps) (_ context.Context, ok bool) {
	caller := callerIn(ctx, r)
	ok, limit, remaining, wait := l.take(caller, scope)
	if limit.PerSecond > 0 {
		h := w.Header()
		h.Set("RateLimit-Limit", strconv.Itoa(limit.Burst))
		h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
		h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	}
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		writeError(w, r, d.Logger, apperr.New(apperr.TooManyRequests,
			"the %s rate limit of %g requests a second (burst %d) is used up; retry after the Retry-After seconds, or raise it (MATCHMAKER_RATE_LIMITS, e.g. %s=%g/s)",
			scope, limit.PerSecond, limit.Burst, scope, 2*limit.PerSecond))
		return ctx, false
	}
	if limit.PerSecond > 0 {
		spend := func(n int) error {
			ok, limit, wait := l.takeN(caller, scope, n)
			if ok {
				return nil
			}
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
			return apperr.New(apperr.TooManyRequests,
				"this request's size costs %d tokens of the %s rate limit (one per %d bytes of body; %g a second, burst %d), more than are left; retry after the Retry-After seconds, or raise it (MATCHMAKER_RATE_LIMITS)",
				min(n+1, limit.Burst), scope, computeBytesPerToken, limit.PerSecond, limit.Burst)
		}
		ctx = context.WithValue(ctx, spendKey{}, spend)
	}
	return ctx, true
}
