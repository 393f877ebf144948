package handlers

import (
	"cmp"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

type ratingJSON struct {
	Context     contextOut `json:"context"`
	Rating      float64    `json:"rating"`
	Uncertainty float64    `json:"uncertainty"`
	Commander   float64    `json:"commander"`
	Weight      float64    `json:"weight"`
	Games       int        `json:"games"`
	rankedJSON
}

// rankedJSON is what a rating read says of the season under way and of smurfs: the season,
// the tier or the placement games, and suspected_smurf, each left out when it does not apply.
type rankedJSON struct {
	Season         string         `json:"season,omitempty"`
	Tier           string         `json:"tier,omitempty"`
	Placement      *placementJSON `json:"placement,omitempty"`
	SuspectedSmurf bool           `json:"suspected_smurf,omitempty"`
}

type placementJSON struct {
	Played int `json:"played"`
	Needed int `json:"needed"`
}

func newRankedJSON(rk *ratings.Ranked, smurf bool) rankedJSON {
	out := rankedJSON{SuspectedSmurf: smurf}
	if rk == nil {
		return out
	}
	out.Season, out.Tier = rk.Season, rk.Tier
	if p := rk.Placement; p != nil {
		out.Placement = &placementJSON{Played: p.Played, Needed: p.Needed}
	}
	return out
}

type playerRatingsResponse struct {
	ID      string       `json:"id"`
	Ratings []ratingJSON `json:"ratings"`
}

type batchRating struct {
	ID          string  `json:"id,omitempty"`
	Bot         string  `json:"bot,omitempty"`
	Known       bool    `json:"known"`
	Rating      float64 `json:"rating"`
	Uncertainty float64 `json:"uncertainty"`
	Weight      float64 `json:"weight"`
	Games       int     `json:"games"`
	rankedJSON
}

type batchRatingsResponse struct {
	Context contextOut    `json:"context"`
	Ratings []batchRating `json:"ratings"`
}

type leaderboardEntry struct {
	Rank         int     `json:"rank"`
	ID           string  `json:"id"`
	Rating       float64 `json:"rating"`
	Uncertainty  float64 `json:"uncertainty"`
	Conservative float64 `json:"conservative"`
	Weight       float64 `json:"weight"`
	Games        int     `json:"games"`
	Tier         string  `json:"tier,omitempty"`
}

type leaderboardResponse struct {
	Context  contextOut         `json:"context"`
	RankedBy string             `json:"ranked_by"`
	K        float64            `json:"k"`
	Season   *seasonBoardJSON   `json:"season,omitempty"`
	Players  []leaderboardEntry `json:"players"`
}

// seasonBoardJSON says which season a leaderboard is of: its name, status, and whether its
// standings are the final ones.
type seasonBoardJSON struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Final  bool   `json:"final"`
	Of     int    `json:"of"`
}

type botMeanResponse struct {
	Context    contextOut `json:"context"`
	MeanWeight float64    `json:"mean_weight"`
	Count      int        `json:"count"`
}

// Limits of the read endpoints' query strings.
const (
	maxBatchIDs      = 1000
	defaultLeaderTop = 10
)

// queryContext reads game_type and mutators from a query string and resolves them through the
// ratings service, so a mutator that does not affect gameplay does not change the context a
// read looks in. A fault goes to fields; the error is an outage.
func queryContext(r *http.Request, svc *ratings.Service, fields *apperr.Fields) (ratings.Context, error) {
	q := r.URL.Query()
	gameType := q.Get("game_type")
	if gameType == "" {
		fields.Add("game_type", "is required")
		return ratings.Context{}, nil
	}
	var mutators []string
	if m := q.Get("mutators"); m != "" {
		mutators = strings.Split(m, ",")
	}
	c, err := svc.Context(r.Context(), gameType, mutators)
	if apperr.CodeOf(err) == apperr.Invalid {
		fields.Include(renameFields(err, "context.", ""))
		return c, nil
	}
	return c, err
}

// renameFields rewrites the field paths of an Invalid error (the service names a context's
// fields as in a result body; a query string has them at the top level).
func renameFields(err error, from, to string) error {
	e, ok := err.(*apperr.Error)
	if !ok {
		return err
	}
	out := *e
	out.Fields = make([]apperr.FieldError, len(e.Fields))
	for i, f := range e.Fields {
		f.Field = to + strings.TrimPrefix(f.Field, from)
		if strings.HasPrefix(f.Field, "mutators[") { // one query parameter holds them all
			f.Field = "mutators"
		}
		out.Fields[i] = f
	}
	return &out
}

func ratingOf(c ratings.Context, v ratings.View) ratingJSON {
	r := v.Rating
	return ratingJSON{Context: newContextOut(c), Rating: r.Skill, Uncertainty: v.Uncertainty, Commander: r.Commander,
		Weight: r.Weight(), Games: r.Games, rankedJSON: newRankedJSON(v.Ranked, v.SuspectedSmurf)}
}

// handlePlayerRatings answers GET /v1/players/{id}/ratings: the player's rating in every
// context it has one (an empty list for a player never seen).
func handlePlayerRatings(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "id")
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		list, err := svc.PlayerRatings(r.Context(), id)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		resp := playerRatingsResponse{ID: id, Ratings: make([]ratingJSON, len(list))}
		for i, cr := range list {
			view, err := svc.Viewer(r.Context(), cr.Context)
			if err != nil {
				writeError(w, r, logger, err)
				return
			}
			resp.Ratings[i] = ratingOf(cr.Context, view(cr.Rating, true))
		}
		respond(w, r, logger, http.StatusOK, resp)
	})
}

// handleBatchRatings answers GET /v1/ratings?game_type=...&ids=a,b&bots=x,y: the ratings of
// many participants in one context; those not rated have known false and the service's weight
// for them (50 for a player, the mean rated bot's for a bot).
func handleBatchRatings(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var fields apperr.Fields
		c, err := queryContext(r, svc, &fields)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		q := r.URL.Query()
		var ps []ratings.Participant
		for _, kind := range []struct {
			param string
			bot   bool
		}{{"ids", false}, {"bots", true}} {
			if v := q.Get(kind.param); v != "" {
				for i, id := range strings.Split(v, ",") {
					if err := ratings.ValidateID(id); err != nil {
						fields.Add(kind.param, "item %d %s", i, err)
						continue
					}
					ps = append(ps, ratings.Participant{ID: id, Bot: kind.bot})
				}
			}
		}
		switch {
		case len(ps) == 0 && fields.Len() == 0:
			fields.Add("ids", "give ids, bots or both (comma-separated)")
		case len(ps) > maxBatchIDs:
			fields.Add("ids", "at most %d ids and bots together", maxBatchIDs)
		}
		if err := fields.Err(); err != nil {
			writeError(w, r, logger, err)
			return
		}
		weights, err := svc.Weights(r.Context(), c, ps)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		view, err := svc.Viewer(r.Context(), c)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		resp := batchRatingsResponse{Context: newContextOut(c), Ratings: make([]batchRating, len(ps))}
		for i, p := range ps {
			wt := weights[i]
			v := view(wt.Rating, wt.Rated)
			br := batchRating{Known: wt.Rated, Rating: v.Rating.Skill, Uncertainty: v.Uncertainty, Weight: wt.Value,
				Games: wt.Rating.Games, rankedJSON: newRankedJSON(v.Ranked, v.SuspectedSmurf)}
			if p.Bot {
				br.Bot = p.ID
			} else {
				br.ID = p.ID
			}
			resp.Ratings[i] = br
		}
		respond(w, r, logger, http.StatusOK, resp)
	})
}

// leaderboardRanks are the values of the leaderboard's rank parameter.
var leaderboardRanks = map[string]ratings.LeaderboardRank{"rating": ratings.LeaderboardBySkill, "conservative": ratings.LeaderboardConservative}

// handleLeaderboard answers GET /v1/leaderboard?game_type=...&limit=N&rank=rating|conservative,
// and with season=S a season's standings: the final ones once it ended, else its ranked
// players live.
func handleLeaderboard(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var fields apperr.Fields
		c, err := queryContext(r, svc, &fields)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		q := r.URL.Query()
		limit := defaultLeaderTop
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > ratings.MaxLeaderboard {
				fields.Add("limit", "must be an integer from 1 to %d", ratings.MaxLeaderboard)
			}
			limit = n
		}
		season := q.Get("season")
		rankBy := cmp.Or(q.Get("rank"), "rating")
		if season != "" {
			rankBy = cmp.Or(q.Get("rank"), "conservative")
		}
		rank, ok := leaderboardRanks[rankBy]
		switch {
		case !ok:
			fields.Add("rank", "must be rating or conservative")
		case season != "" && rank != ratings.LeaderboardConservative:
			fields.Add("rank", "a season's standings are by conservative rating")
		}
		if err := fields.Err(); err != nil {
			writeError(w, r, logger, err)
			return
		}
		if season != "" {
			seasonBoard(w, r, logger, svc, c, season, limit)
			return
		}
		by, top, err := svc.Leaderboard(r.Context(), c, limit, rank)
		var view func(ratings.Rating, bool) ratings.View
		if err == nil {
			view, err = svc.Viewer(r.Context(), c)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		resp := leaderboardResponse{Context: newContextOut(c), RankedBy: rankBy, K: by.K, Players: make([]leaderboardEntry, len(top))}
		for i, rp := range top {
			v := view(rp.Rating, true)
			resp.Players[i] = leaderboardEntry{Rank: i + 1, ID: rp.Participant.ID, Rating: rp.Rating.Skill,
				Uncertainty: by.Sigma(rp.Rating), Conservative: by.Score(rp.Rating), Weight: rp.Rating.Weight(), Games: rp.Rating.Games}
			if v.Ranked.Placed() {
				resp.Players[i].Tier = v.Ranked.Tier
			}
		}
		respond(w, r, logger, http.StatusOK, resp)
	})
}

// seasonBoard answers a leaderboard of a season: its standings, final or live.
func seasonBoard(w http.ResponseWriter, r *http.Request, logger *slog.Logger, svc *ratings.Service, c ratings.Context, season string, limit int) {
	se, rows, err := svc.SeasonStandings(r.Context(), c, season, 0, limit)
	if err != nil {
		writeError(w, r, logger, err)
		return
	}
	resp := leaderboardResponse{Context: newContextOut(c), RankedBy: "conservative", K: ratings.ConservativeK,
		Season: &seasonBoardJSON{Name: se.Name, Status: seasonStatus(se), Final: !se.FinalAt.IsZero()}, Players: make([]leaderboardEntry, len(rows))}
	for i, st := range rows {
		rt := st.Rating
		resp.Season.Of = st.Of
		resp.Players[i] = leaderboardEntry{Rank: st.Position, ID: st.Player, Rating: rt.Skill, Uncertainty: (rt.Skill - st.Score) / ratings.ConservativeK,
			Conservative: st.Score, Weight: rt.Weight(), Games: rt.SeasonGames, Tier: st.Tier}
	}
	respond(w, r, logger, http.StatusOK, resp)
}

// handleBotMean answers GET /v1/bots/mean?game_type=...: the MEANBOT of the line protocol.
func handleBotMean(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var fields apperr.Fields
		c, err := queryContext(r, svc, &fields)
		if err == nil {
			err = fields.Err()
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		mean, count, err := svc.BotMean(r.Context(), c)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, botMeanResponse{Context: newContextOut(c), MeanWeight: mean, Count: count})
	})
}
