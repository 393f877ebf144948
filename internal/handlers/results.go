package handlers

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

type resultRequest struct {
	MatchID   string         `json:"match_id"`
	Context   contextJSON    `json:"context"`
	Map       string         `json:"map"`
	DurationS *float64       `json:"duration_s"`
	Teams     []resultTeam   `json:"teams"`
	Winner    jsontext.Value `json:"winner"`
}

type contextJSON struct {
	GameType string   `json:"game_type"`
	Mutators []string `json:"mutators"`
}

type resultTeam struct {
	Side    string              `json:"side"`
	Players []resultParticipant `json:"players"`
}

type resultParticipant struct {
	ID         string   `json:"id,omitempty"`
	Bot        string   `json:"bot,omitempty"`
	JoinedS    *float64 `json:"joined_s,omitempty"`
	LeftS      *float64 `json:"left_s,omitempty"`
	CommanderS *float64 `json:"commander_s,omitempty"`
}

type resultResponse struct {
	MatchID        string         `json:"match_id"`
	Context        contextOut     `json:"context"`
	WinProbability [2]float64     `json:"win_probability"`
	Updates        []ratingUpdate `json:"updates"`
}

type contextOut struct {
	GameType string   `json:"game_type"`
	Mutators []string `json:"mutators"`
	Key      string   `json:"key"`
}

type ratingUpdate struct {
	ID     string  `json:"id,omitempty"`
	Bot    string  `json:"bot,omitempty"`
	Team   int     `json:"team"`
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Weight float64 `json:"weight"`
	Games  int     `json:"games"`
}

func newContextOut(c ratings.Context) contextOut {
	m := c.Mutators
	if m == nil {
		m = []string{}
	}
	return contextOut{GameType: c.GameType, Mutators: m, Key: c.Key()}
}

// handleResults answers POST /v1/results: one finished match in, every participant's rating
// moved by the model, in one transaction. The same match id with the same result replays the
// first answer; with another result it is a 409.
func handleResults(logger *slog.Logger, svc *ratings.Service, queues *queue.Service, metrics *domainMetrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[resultRequest](r)
		var result ratings.Result
		if err == nil {
			result, err = req.result()
		}
		if err == nil {
			err = allowGameType(r.Context(), "context.game_type", req.Context.GameType)
		}
		if err == nil && queues != nil {
			err = queues.CheckResult(r.Context(), req.MatchID, req.Context.GameType, req.roster())
		}
		if err != nil {
			metrics.results.WithLabelValues("rejected").Inc()
			writeError(w, r, logger, err)
			return
		}
		receipt, err := svc.Record(r.Context(), result)
		if err != nil {
			if apperr.CodeOf(err) == apperr.Invalid {
				metrics.results.WithLabelValues("rejected").Inc()
			}
			writeError(w, r, logger, err)
			return
		}
		if receipt.Replayed {
			w.Header().Set("Idempotent-Replayed", "true")
			metrics.results.WithLabelValues("replayed").Inc()
		} else {
			metrics.results.WithLabelValues("recorded").Inc()
			metrics.ratingUpdates.Add(float64(len(receipt.Outcome.Updates)))
		}
		respond(w, r, logger, http.StatusCreated, newResultResponse(receipt))
	})
}

func newResultResponse(rc ratings.Receipt) resultResponse {
	o := rc.Outcome
	resp := resultResponse{
		MatchID:        rc.MatchID,
		Context:        newContextOut(rc.Context),
		WinProbability: o.WinProbability,
		Updates:        make([]ratingUpdate, len(o.Updates)),
	}
	for i, u := range o.Updates {
		ru := ratingUpdate{Team: u.Team, Before: u.Before.Skill, After: u.After.Skill,
			Weight: u.After.Weight(), Games: u.After.Games}
		if u.Participant.Bot {
			ru.Bot = u.Participant.ID
		} else {
			ru.ID = u.Participant.ID
		}
		resp.Updates[i] = ru
	}
	return resp
}

// roster is the players' ids by team ("" for a bot), as queue.Service.CheckResult takes them.
func (req *resultRequest) roster() [][]string {
	out := make([][]string, len(req.Teams))
	for i, t := range req.Teams {
		for _, p := range t.Players {
			out[i] = append(out[i], p.ID)
		}
	}
	return out
}

// result converts the request into the model's Result and validates it: every fault at once.
func (req *resultRequest) result() (ratings.Result, error) {
	var fields apperr.Fields
	r := ratings.Result{
		MatchID:  req.MatchID,
		GameType: req.Context.GameType,
		Mutators: req.Context.Mutators,
		Map:      req.Map,
		Teams:    make([]ratings.Team, len(req.Teams)),
	}
	if req.DurationS == nil {
		fields.Add("duration_s", "is required")
	} else {
		r.DurationS = *req.DurationS
	}
	switch {
	case len(req.Winner) == 0:
		fields.Add("winner", "is required: a team index, or null for a draw")
	case req.Winner.Kind() == 'n':
	default:
		var winner int
		if err := json.Unmarshal(req.Winner, &winner); err != nil {
			fields.Add("winner", "must be 0 or 1 (a team index), or null for a draw")
		} else {
			r.Winner = &winner
		}
	}
	for ti, t := range req.Teams {
		team := ratings.Team{Side: t.Side, Players: make([]ratings.Player, len(t.Players))}
		for pi, p := range t.Players {
			left := r.DurationS
			if p.LeftS != nil {
				left = *p.LeftS
			}
			team.Players[pi] = ratings.Player{ID: p.ID, Bot: p.Bot, JoinedS: deref(p.JoinedS), LeftS: left,
				CommanderS: deref(p.CommanderS)}
		}
		r.Teams[ti] = team
	}
	fields.Include(r.Validate())
	return r, fields.Err()
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
