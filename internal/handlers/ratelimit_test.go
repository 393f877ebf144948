package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRateLimits(t *testing.T) {
	t.Parallel()
	got, err := ParseRateLimits(" match=200/s:400, results=2.5/s, admin=off ")
	if err != nil {
		t.Fatal(err)
	}
	if got[ScopeMatch] != (RateLimit{200, 400}) || got[ScopeResults] != (RateLimit{2.5, 5}) ||
		got[ScopeRead] != DefaultRateLimits()[ScopeRead] {
		t.Fatalf("parsed %+v", got)
	}
	if _, limited := got[ScopeAdmin]; limited {
		t.Fatal("admin=off must remove the admin limit")
	}
	for _, bad := range []string{"match", "play=1/s", "match=0/s", "match=-1/s", "match=10", "match=10/s:0", "match=x/s", "match=Inf/s"} {
		if _, err := ParseRateLimits(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// A caller that uses up its bucket gets 429 with Retry-After and the budget headers; other
// callers and other route classes keep theirs; the bucket refills with time. The bucket that
// runs out refills a token in 100 s, so that three requests find it empty however slowly
// they go (at 10/s the host took, under -race and load 20, over the 100 ms of a token between
// the first and the third, which found a token again); the refill is a bucket of its own.
func TestRateLimitsArePerCallerAndRouteClass(t *testing.T) {
	t.Parallel()
	keys, err := ParseAPIKeys("a:read+match:" + HashKey("ka") + ",b:read+match:" + HashKey("kb"))
	if err != nil {
		t.Fatal(err)
	}
	h := NewServer(Deps{Auth: &Auth{Keys: keys}, RateLimits: RateLimits{ScopeRead: {PerSecond: 0.01, Burst: 2}}})
	readFrom := func(h http.Handler, key string) *http.Response {
		return exchange(t, h, http.MethodGet, "/v1/players/alice/ratings", "", "", "Authorization", "Bearer "+key)
	}
	read := func(key string) *http.Response { return readFrom(h, key) }
	for i, want := range []int{200, 200, 429} {
		resp := read("ka")
		if resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, want)
		}
		if resp.Header.Get("RateLimit-Limit") != "2" {
			t.Fatalf("RateLimit-Limit %q", resp.Header.Get("RateLimit-Limit"))
		}
		if want == 429 {
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
			}
			if p := readProblem(t, resp); p.Status != 429 {
				t.Fatalf("problem %+v", p)
			}
		}
	}
	if resp := read("kb"); resp.StatusCode != 200 {
		t.Fatalf("another key: %d", resp.StatusCode)
	}
	if resp := exchange(t, h, http.MethodPost, "/v1/matchmake", "application/json", `{"players":[]}`, "Authorization", "Bearer ka"); resp.StatusCode != 200 {
		t.Fatalf("another route class: %d", resp.StatusCode)
	}
	fast := NewServer(Deps{Auth: &Auth{Keys: keys}, RateLimits: RateLimits{ScopeRead: {PerSecond: 10, Burst: 1}}})
	if resp := readFrom(fast, "ka"); resp.StatusCode != 200 {
		t.Fatalf("a full bucket of one: %d", resp.StatusCode)
	}
	time.Sleep(150 * time.Millisecond) // 10/s refills one token in 100 ms
	if resp := readFrom(fast, "ka"); resp.StatusCode != 200 {
		t.Fatalf("after the refill: %d", resp.StatusCode)
	}
}

// A compute request pays the rate limit by its body's size: a large matchmake takes most of
// the bucket, so the next one right after is a 429 naming its cost, while small requests of
// another key go on; a small request costs one token.
func TestComputeRequestsPayBySize(t *testing.T) {
	t.Parallel()
	keys, err := ParseAPIKeys("a:match:" + HashKey("ka") + ",b:match:" + HashKey("kb"))
	if err != nil {
		t.Fatal(err)
	}
	h := NewServer(Deps{Auth: &Auth{Keys: keys}, RateLimits: RateLimits{ScopeMatch: {PerSecond: 1, Burst: 20}}})
	big := thesisQueueBody(3000) // ~110 KB: 27 tokens, capped at the burst
	matchmake := func(key, body string) *http.Response {
		return exchange(t, h, http.MethodPost, "/v1/matchmake", "application/json", body, "Authorization", "Bearer "+key)
	}
	if resp := matchmake("ka", big); resp.StatusCode != http.StatusOK {
		t.Fatalf("a large matchmake on a full bucket: %d", resp.StatusCode)
	}
	if resp := matchmake("ka", big); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a second large matchmake at once: %d, want 429 with Retry-After", resp.StatusCode)
	}
	// Another key: small requests cost a token each; with 15 of 20 left, a large one cannot
	// pay its 20 and is refused naming its cost.
	small := `{"team_size":1,"players":[{"id":"a","rating":1},{"id":"b","rating":2}]}`
	for i := range 5 {
		if resp := matchmake("kb", small); resp.StatusCode != http.StatusOK {
			t.Fatalf("small request %d of another key: %d", i, resp.StatusCode)
		}
	}
	resp := matchmake("kb", big)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a large matchmake with 15 tokens left: %d, want 429", resp.StatusCode)
	}
	if p := readProblem(t, resp); !strings.Contains(p.Detail, "costs 20 tokens") {
		t.Fatalf("the 429 does not name the cost: %q", p.Detail)
	}
	if resp := matchmake("kb", small); resp.StatusCode != http.StatusOK {
		t.Fatalf("a small request after the refused large one: %d (the refusal must spend nothing)", resp.StatusCode)
	}
}
