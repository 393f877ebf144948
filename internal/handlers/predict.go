package handlers

import (
	"log/slog"
	"net/http"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

type predictRequest struct {
	Context contextJSON   `json:"context"`
	Map     string        `json:"map"`
	Teams   []predictTeam `json:"teams"`
}

type predictTeam struct {
	Side    string          `json:"side"`
	Players []predictPlayer `json:"players"`
	Bots    []predictBot    `json:"bots"`
}

type predictPlayer struct {
	ID string `json:"id"`
}

type predictBot struct {
	Name string `json:"name"`
}

type predictResponse struct {
	Context contextOut `json:"context"`
	Model   string     `json:"model"`
	// DrawProbability is absent: no model served today predicts draws (each counts a draw as
	// half a win, and win_probability shares the draws between the teams).
	DrawProbability *float64          `json:"draw_probability,omitempty"`
	Quality         float64           `json:"quality"`
	Teams           []predictTeamJSON `json:"teams"`
}

type predictTeamJSON struct {
	WinProbability float64             `json:"win_probability"`
	Players        []predictRatingJSON `json:"players"`
	Bots           []predictRatingJSON `json:"bots"`
}

type predictRatingJSON struct {
	ID          string  `json:"id,omitempty"`
	Name        string  `json:"name,omitempty"`
	Known       bool    `json:"known"`
	Rating      float64 `json:"rating"`
	Uncertainty float64 `json:"uncertainty"`
	Weight      float64 `json:"weight"`
	Games       int     `json:"games"`
}

// handlePredict answers POST /v1/predict: proposed teams in, each team's win probability and
// the match's quality out, by the context's model from the stored ratings; nothing is written.
func handlePredict(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[predictRequest](r)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		if err := allowGameType(r.Context(), "context.game_type", req.Context.GameType); err != nil {
			writeError(w, r, logger, err)
			return
		}
		pred, err := svc.Predict(r.Context(), req.proposal())
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, newPredictResponse(pred))
	})
}

func (req *predictRequest) proposal() ratings.Proposal {
	p := ratings.Proposal{GameType: req.Context.GameType, Mutators: req.Context.Mutators, Map: req.Map,
		Teams: make([]ratings.ProposedTeam, len(req.Teams))}
	for i, t := range req.Teams {
		pt := ratings.ProposedTeam{Side: t.Side, Players: make([]string, len(t.Players)), Bots: make([]string, len(t.Bots))}
		for j, pl := range t.Players {
			pt.Players[j] = pl.ID
		}
		for j, b := range t.Bots {
			pt.Bots[j] = b.Name
		}
		p.Teams[i] = pt
	}
	return p
}

func newPredictResponse(p ratings.Prediction) predictResponse {
	resp := predictResponse{Context: newContextOut(p.Context), Model: p.Model, Quality: p.Quality,
		Teams: make([]predictTeamJSON, len(p.Teams))}
	for i, team := range p.Teams {
		t := predictTeamJSON{WinProbability: p.WinProbability[i], Players: []predictRatingJSON{}, Bots: []predictRatingJSON{}}
		for _, pp := range team {
			pr := predictRatingJSON{Known: pp.Rated, Rating: pp.Rating.Skill, Uncertainty: pp.Uncertainty,
				Weight: pp.Rating.Weight(), Games: pp.Rating.Games}
			if pp.Participant.Bot {
				pr.Name = pp.Participant.ID
				t.Bots = append(t.Bots, pr)
			} else {
				pr.ID = pp.Participant.ID
				t.Players = append(t.Players, pr)
			}
		}
		resp.Teams[i] = t
	}
	return resp
}
