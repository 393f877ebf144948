package handlers

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"matchmaker/internal/apperr"
	"matchmaker/internal/queue"
)

// This file holds PUT /v1/matches/{id}/placement (scope match): where a match is played,
// put by the studio's backend once it has a game server for it (DESIGN, "Placement").

type placementRequest struct {
	// Connection is opaque: whatever the studio's clients need to join the game server.
	Connection json.RawMessage `json:"connection"`
}

// handlePlaceMatch answers PUT /v1/matches/{id}/placement: 200 with the match, its
// connection stored on it and on its tickets' assignments (each with a placed event). The key
// must own the match's tickets (or be an admin key): otherwise, as for an unknown match, 404;
// a backfill's fill is a 409.
func handlePlaceMatch(logger *slog.Logger, svc *queue.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "id")
		var req placementRequest
		if err == nil {
			req, err = decode[placementRequest](r)
		}
		if err == nil && (len(req.Connection) == 0 || string(req.Connection) == "null") {
			err = apperr.Field("connection", "is required: where the match's players connect, as a JSON object")
		}
		var m queue.Match
		if err == nil {
			m, err = svc.Place(r.Context(), id, req.Connection)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, newMatchOutJSON(m))
	})
}
