package handlers

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// downStore is a rating store whose database does not answer: every call is Unavailable, as
// the Postgres store says once its deadline has passed.
type downStore struct{ ratings.Store }

var errDown = apperr.New(apperr.Unavailable, "db: ratings: the database did not answer within 3s")

func (downStore) Ping(context.Context) error { return errDown }
func (downStore) RecordResult(context.Context, ratings.RecordRequest, ratings.ApplyFunc) (ratings.Recorded, error) {
	return ratings.Recorded{}, errDown
}
func (downStore) Leaderboard(context.Context, ratings.Context, int, ratings.Ranking) ([]ratings.RatedParticipant, error) {
	return nil, errDown
}

// TestEveryUnavailableCarriesRetryAfter: a 503 tells the client when to try again, whichever
// endpoint answers it (the spec check in exchange holds the header to the spec's).
func TestEveryUnavailableCarriesRetryAfter(t *testing.T) {
	h := NewServer(Deps{Ratings: ratings.NewService(downStore{ratings.NewMemoryStore(nil)}, ratings.DefaultModel()), Auth: &Auth{Off: true}})
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/readyz", ""},
		{http.MethodPost, "/v1/results", resultBody("m1", 0)},
		{http.MethodGet, "/v1/leaderboard?game_type=ctf", ""},
	} {
		resp := exchange(t, h, tc.method, tc.path, "application/json", tc.body)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != retryAfterSeconds {
			t.Errorf("%s %s: %d with Retry-After %q, want 503 with %q", tc.method, tc.path,
				resp.StatusCode, resp.Header.Get("Retry-After"), retryAfterSeconds)
		}
	}
	// And no other status does.
	resp := exchange(t, h, http.MethodGet, "/healthz", "", "")
	if resp.Header.Get("Retry-After") != "" {
		t.Errorf("/healthz %d carries Retry-After", resp.StatusCode)
	}
}

// An outage is logged as a warning, but not a request whose client hung up first (a
// long-poll's client going away): that is logged at debug.
func TestUnavailableLoggedUnlessTheClientLeft(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		hungUp   bool
		wantWarn bool
	}{{"outage", false, true}, {"client gone", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			ctx, cancel := context.WithCancel(context.Background())
			if tc.hungUp {
				cancel()
			} else {
				defer cancel()
			}
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/tickets/tk-1?wait_s=30", nil)
			w := httptest.NewRecorder()
			writeError(w, r, logger, errDown)
			if w.Code != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503", w.Code)
			}
			warned := strings.Contains(logs.String(), `"level":"WARN"`)
			if warned != tc.wantWarn {
				t.Fatalf("warned %v, want %v; logs: %s", warned, tc.wantWarn, logs.String())
			}
			if !strings.Contains(logs.String(), "did not answer") {
				t.Fatalf("the error is not in the log line: %s", logs.String())
			}
		})
	}
}
