package handlers

import (
	"log/slog"
	"net/http"
	"time"

	"matchmaker/internal/apperr"
	"matchmaker/internal/matchmaker/teams"
	"matchmaker/internal/ratings"
)

type advantageRequest struct {
	Teams   []rosterJSON `json:"teams"`
	Context *contextJSON `json:"context"`
}

type advantageResponse struct {
	Teams      []advantageTeamJSON `json:"teams"`
	Strongest  int                 `json:"strongest"`
	Balance    float64             `json:"balance"`
	Difference float64             `json:"difference"`
	Weights    map[string]float64  `json:"weights"`
}

type advantageTeamJSON struct {
	Total          float64 `json:"total"`
	WinProbability float64 `json:"win_probability"`
	Handicap       float64 `json:"handicap"`
}

// handleTeamsAdvantage answers POST /v1/teams/advantage: teams with their specific humans and
// bots in; each team's total, its win probability under Bradley-Terry on the totals, and the
// handicap that would even it with the strongest out.
func handleTeamsAdvantage(logger *slog.Logger, limits Limits, store ratings.Store, metrics *domainMetrics) http.Handler {
	maxPlayers := teamPlayerLimit(limits)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[advantageRequest](r)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		var fields apperr.Fields
		tw := newStoredWeights(req.Context, 1, &fields)
		rs := rosters(&fields, tw, req.Teams, nil, nil, nil, maxPlayers)
		err = fields.Err()
		if err == nil {
			err = tw.load(r.Context(), store)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		start := time.Now()
		result, err := teams.Advantage(rs)
		elapsed := time.Since(start)
		if err != nil {
			writeError(w, r, logger, apperr.Rename(err, teamField))
			return
		}
		metrics.observeTeams("teams_advantage", "-", teamHumans(rs), elapsed)
		resp := advantageResponse{
			Teams:      make([]advantageTeamJSON, len(result.Teams)),
			Strongest:  result.Strongest,
			Balance:    result.Balance,
			Difference: result.Difference,
			Weights:    humanWeights(req.Teams, rs, nil, nil),
		}
		for i, t := range result.Teams {
			resp.Teams[i] = advantageTeamJSON{Total: t.Total, WinProbability: t.WinProbability, Handicap: t.Handicap}
		}
		if err := encode(w, http.StatusOK, resp); err != nil {
			logger.ErrorContext(r.Context(), "write teams advantage response", "err", err)
		}
	})
}
