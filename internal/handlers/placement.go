package handlers

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

// This file holds PUT /v1/matches/{id}/placement (scope match): where a match is played,
// put by the studio's backend once it has a game server for it (DESIGN, "Placement").

type placementRequest struct {
	// Connection is opaque: whatever the studio's clients need to join the game server.
	Connection json.RawMessage `json:"connection"`
	// Failed, instead, says why a match being placed cannot be.
	Failed *string `json:"failed"`
}

// allocatorJSON is a queue's allocator as PUT /v1/queues/{name} takes it.
type allocatorJSON struct {
	URL      string `json:"url"`
	Secret   string `json:"secret"`
	TimeoutS *int   `json:"timeout_s"`
}

// allocatorPublicJSON is a queue's allocator as the API shows it: never its secret.
type allocatorPublicJSON struct {
	URL      string `json:"url"`
	TimeoutS int    `json:"timeout_s"`
}

// allocator is the queue's allocator; nil without one. timeout_s defaults to 30.
func (a *allocatorJSON) allocator() *queue.Allocator {
	if a == nil {
		return nil
	}
	timeout := 30 * time.Second
	if a.TimeoutS != nil {
		timeout = durationOf(int64(*a.TimeoutS), time.Second)
	}
	return &queue.Allocator{URL: a.URL, Secret: a.Secret, Timeout: timeout}
}

func newAllocatorPublicJSON(a *queue.Allocator) *allocatorPublicJSON {
	if a == nil {
		return nil
	}
	return &allocatorPublicJSON{URL: a.URL, TimeoutS: int(a.Timeout / time.Second)}
}

// handlePlaceMatch answers PUT /v1/matches/{id}/placement: 200 with the match, its
// connection stored on it and on its tickets' assignments (each with a placed event). The key
// must own the match's tickets (or be an admin key): otherwise, as for an unknown match, 404;
// a backfill's fill is a 409.
func handlePlaceMatch(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "id")
		var req placementRequest
		if err == nil {
			req, err = decode[placementRequest](r)
		}
		hasConnection := len(req.Connection) > 0 && string(req.Connection) != "null"
		switch {
		case err != nil:
		case hasConnection && req.Failed != nil:
			err = apperr.Field("failed", "must not be given with a connection: one or the other")
		case req.Failed != nil:
			if _, err = svc.FailPlacement(r.Context(), id, *req.Failed); err == nil {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		case !hasConnection:
			err = apperr.Field("connection", "is required: where the match's players connect, as a JSON object (or failed: why it cannot be placed)")
		}
		var m queue.Match
		if err == nil {
			m, err = svc.Place(r.Context(), id, req.Connection)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, new(newMatchOutJSON(m)))
	})
}
