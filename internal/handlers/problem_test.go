package handlers

import (
	"context"
	"net/http"
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
