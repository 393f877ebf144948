package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// postgresLikeStore fails like Postgres on text it cannot hold (a NUL, invalid UTF-8:
// SQLSTATE 22021): an id that reaches it unchecked becomes a 500, which the fuzz tests below
// forbid.
type postgresLikeStore struct{ ratings.Store }

func unstorable(s string) error {
	if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
		return apperr.New(apperr.Internal, "invalid byte sequence for encoding UTF8 (22021)")
	}
	return nil
}

func (s postgresLikeStore) Ratings(ctx context.Context, c ratings.Context, ps []ratings.Participant) (map[ratings.Participant]ratings.Rating, error) {
	for _, p := range ps {
		if err := unstorable(p.ID); err != nil {
			return nil, err
		}
	}
	return s.Store.Ratings(ctx, c, ps)
}

func (s postgresLikeStore) PlayerRatings(ctx context.Context, id string) ([]ratings.ContextRating, error) {
	if err := unstorable(id); err != nil {
		return nil, err
	}
	return s.Store.PlayerRatings(ctx, id)
}

func (s postgresLikeStore) RecordResult(ctx context.Context, req ratings.RecordRequest, apply ratings.ApplyFunc) (ratings.Recorded, error) {
	if err := unstorable(req.Result.MatchID); err != nil {
		return ratings.Recorded{}, err
	}
	return s.Store.RecordResult(ctx, req, apply)
}

// FuzzIDs sends an arbitrary byte string as an id to every family of endpoints that takes one
// (a matchmake queue, a team split with stored weights, a result, a player's ratings by path,
// a batch by query, a ticket, a ticket by path, a match by path) and asserts that no answer is
// a 5xx: every transport applies the one id rule before any store call.
func FuzzIDs(f *testing.F) {
	for _, seed := range []string{"alice", "a\x00b", "a\xffb", "a b", "a/b", "%41", "", strings.Repeat("x", 129), "é", "\u2028", "a\tb", "alice\u200b", "\u202eevil", "e\u0301"} {
		f.Add(seed)
	}
	rs := ratings.NewService(postgresLikeStore{ratings.NewMemoryStore(nil)}, ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs})
	h := NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Off: true}})
	exchange(f, h, http.MethodPut, "/v1/queues/q", "application/json", `{"context":{"game_type":"ctf"},"team_size":2}`)
	f.Fuzz(func(t *testing.T, id string) {
		// A JSON string can hold any valid UTF-8; the encoder replaces invalid bytes, so the
		// raw bytes are spliced in too (a body the decoder must refuse, not pass on).
		quoted, _ := json.Marshal(id)
		raw := `"` + id + `"`
		for _, q := range []string{string(quoted), raw} {
			for _, c := range []struct{ method, path, body string }{
				{"POST", "/v1/matchmake", `{"context":{"game_type":"ctf"},"players":[{"id":` + q + `},{"id":"zed"}]}`},
				{"POST", "/v1/teams", `{"context":{"game_type":"ctf"},"players":[{"id":` + q + `},{"id":"zed"}]}`},
				{"POST", "/v1/teams/advantage", `{"context":{"game_type":"ctf"},"teams":[{"players":[{"id":"a"}],"bots":[{"name":` + q + `}]},{"players":[{"id":"b"}]}]}`},
				{"POST", "/v1/results", `{"match_id":` + q + `,"context":{"game_type":"ctf"},"map":"m","duration_s":60,"winner":0,
					"teams":[{"side":"red","players":[{"id":` + q + `}]},{"side":"blue","players":[{"id":"zed"}]}]}`},
				{"POST", "/v1/queues/q/tickets", `{"players":[{"id":` + q + `}]}`},
			} {
				resp := exchange(t, h, c.method, c.path, "application/json", c.body)
				if resp.StatusCode >= 500 {
					t.Fatalf("%s %s with id %q: %d", c.method, c.path, id, resp.StatusCode)
				}
			}
		}
		for _, path := range []string{
			"/v1/players/" + url.PathEscape(id) + "/ratings",
			"/v1/ratings?game_type=ctf&ids=" + url.QueryEscape(id) + "&bots=" + url.QueryEscape(id),
			"/v1/tickets/" + url.PathEscape(id),
			"/v1/matches/" + url.PathEscape(id),
		} {
			if id == "" || strings.Contains(path, "/../") || strings.HasSuffix(path, "/..") {
				continue // not a path the router sees as given
			}
			resp := exchange(t, h, http.MethodGet, path, "", "")
			if resp.StatusCode >= 500 {
				t.Fatalf("GET %s: %d", path, resp.StatusCode)
			}
		}
	})
}
