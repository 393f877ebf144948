package handlers

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
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
func handleTeamsAdvantage(logger *slog.Logger, limits Limits, svc *ratings.Service, metrics *domainMetrics, gate *workGate) http.Handler {
	maxPlayers := teamPlayerLimit(limits)
	return handleCompute(logger, svc, gate, func(req *advantageRequest) (computation, error) {
		var fields apperr.Fields
		tw := newStoredWeights(req.Context, 1, &fields)
		rs := rosters(&fields, tw, req.Teams, nil, nil, nil, maxPlayers)
		if err := fields.Err(); err != nil {
			return computation{}, err
		}
		var result teams.AdvantageResult
		return computation{
			stored: tw,
			run: func() (err error) {
				result, err = teams.Advantage(rs)
				return apperr.Rename(err, teamField)
			},
			observe: func(elapsed time.Duration) {
				metrics.observeTeams("teams_advantage", "-", teamHumans(rs), elapsed)
			},
			respond: func(w http.ResponseWriter, r *http.Request) {
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
				respond(w, r, logger, http.StatusOK, resp)
			},
		}, nil
	})
}
