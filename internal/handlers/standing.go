package handlers

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

// GET /v1/players/{id}/standing (scope read) and DELETE (scope admin): a player's penalties,
// by rating context (internal/queue/penalties.go).

type standingResponse struct {
	Player   string                `json:"player"`
	Contexts []contextStandingJSON `json:"contexts"`
}

type contextStandingJSON struct {
	Context          string      `json:"context"`
	CooldownUntil    *time.Time  `json:"cooldown_until,omitempty"`
	Dodges           []dodgeJSON `json:"dodges"`
	Leaves           []leaveJSON `json:"leaves"`
	LowPriorityGames int         `json:"low_priority_games"`
}

type dodgeJSON struct {
	At      time.Time `json:"at"`
	Queue   string    `json:"queue"`
	MatchID string    `json:"match_id"`
}

type leaveJSON struct {
	At      time.Time `json:"at"`
	MatchID string    `json:"match_id"`
}

func newStandingResponse(player string, sts []queuesvc.PlayerStanding) standingResponse {
	out := standingResponse{Player: player, Contexts: make([]contextStandingJSON, len(sts))}
	for i, st := range sts {
		c := contextStandingJSON{Context: st.Context, Dodges: make([]dodgeJSON, len(st.Dodges)),
			Leaves: make([]leaveJSON, len(st.Leaves)), LowPriorityGames: st.LowPriorityGames}
		if !st.CooldownUntil.IsZero() {
			c.CooldownUntil = new(st.CooldownUntil.UTC())
		}
		for j, d := range st.Dodges {
			c.Dodges[j] = dodgeJSON{At: d.At.UTC(), Queue: d.Queue, MatchID: d.Match}
		}
		for j, l := range st.Leaves {
			c.Leaves[j] = leaveJSON{At: l.At.UTC(), MatchID: l.Match}
		}
		out.Contexts[i] = c
	}
	return out
}

// handleGetStanding answers GET /v1/players/{id}/standing: his cooldown, dodges, leaves and
// low-priority games left in each context he has any (none: an empty list).
func handleGetStanding(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		sts, err := svc.PlayerStandings(r.Context(), id)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, newStandingResponse(id, sts))
	})
}

// handleClearStanding answers DELETE /v1/players/{id}/standing: 204, his standing cleared in
// every context (a player without one included).
func handleClearStanding(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := svc.ClearStanding(r.Context(), chi.URLParam(r, "id")); err != nil {
			writeError(w, r, logger, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
