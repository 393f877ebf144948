package handlers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a log destination handlers may write to from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Failed authentications are limited per address: past FailedAuthLimit's burst, the
// address's failures get 429 with Retry-After, while a valid key from it (a client behind the
// same proxy) and another address are served. Each counted failure is logged with the address
// and a prefix of the presented key's hash, never the key.
func TestFailedAuthenticationIsLimitedAndLogged(t *testing.T) {
	t.Parallel()
	keys, err := ParseAPIKeys("matcher:match:" + HashKey("m-key"))
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	h := NewServer(Deps{Auth: &Auth{Keys: keys}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	post := func(from, key string) *http.Response {
		req := httptest.NewRequest(http.MethodPost, "/v1/matchmake", strings.NewReader(`{"team_size":1,"players":[{"id":"a","rating":1},{"id":"b","rating":2}]}`))
		req.RemoteAddr = from
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		resp := rec.Result()
		validateResponse(t, req, resp)
		return resp
	}
	const attacker, neighbour = "203.0.113.9:4000", "198.51.100.7:5000"
	// The bucket refills by one a second while this runs (slowly, under -race), so the 429
	// comes after the burst and the few failures refilled meanwhile.
	unauthorized := 0
	for i := 0; ; i++ {
		resp := post(attacker, "guess-"+strings.Repeat("x", i))
		if resp.StatusCode == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("a 429 without Retry-After")
			}
			break
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad key %d: %d, want 401", i, resp.StatusCode)
		}
		if unauthorized++; unauthorized > 10*FailedAuthLimit.Burst {
			t.Fatalf("%d failures from one address and no 429", unauthorized)
		}
	}
	if unauthorized < FailedAuthLimit.Burst {
		t.Fatalf("429 after %d failures, before the burst of %d", unauthorized, FailedAuthLimit.Burst)
	}
	if resp := post(attacker, "another-guess"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("another failure from the limited address: %d, want 429", resp.StatusCode)
	}
	if resp := post(attacker, "m-key"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a valid key from the limited address: %d, want 200 (a client behind the same proxy)", resp.StatusCode)
	}
	if resp := post(neighbour, "m-key"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a valid key from another address: %d, want 200", resp.StatusCode)
	}

	text := logs.String()
	if n := strings.Count(text, `"msg":"auth: failed"`); n < FailedAuthLimit.Burst || n > unauthorized {
		t.Errorf("%d audit lines for %d failures, want one per counted failure (at least %d)", n, unauthorized, FailedAuthLimit.Burst)
	}
	sum := sha256.Sum256([]byte("guess-"))
	if !strings.Contains(text, `"remote":"203.0.113.9"`) || !strings.Contains(text, `"key_sha256_prefix":"`+hex.EncodeToString(sum[:6])+`"`) {
		t.Errorf("the audit lines lack the address or the key's hash prefix:\n%s", text)
	}
	if strings.Contains(text, "guess-") {
		t.Error("a presented key was logged")
	}
	if !strings.Contains(text, "auth: failures from this address are rate limited") {
		t.Error("the start of the limiting is not logged")
	}
}

// An id with a zero-width space, a bidi override or in a form other than NFC is a 400 naming
// the field, over HTTP as anywhere (the one id rule).
func TestLookAlikeIDsAreRefused(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{Auth: &Auth{Off: true}})
	for _, id := range []string{`alice\u200b`, `\u202eecila`, `Zoe\u0308`} {
		resp := exchange(t, h, http.MethodPost, "/v1/matchmake", "application/json",
			`{"team_size":1,"players":[{"id":"`+id+`","rating":1},{"id":"alice","rating":2}]}`)
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"field":"players[0].id"`) {
			t.Errorf("id %s: %d %s, want 400 naming players[0].id", id, resp.StatusCode, body)
		}
	}
}
