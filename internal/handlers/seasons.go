package handlers

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

type seasonRequest struct {
	Mutators       []string       `json:"mutators"`
	StartsAt       string         `json:"starts_at"`
	EndsAt         string         `json:"ends_at"`
	Reset          *resetJSON     `json:"reset"`
	PlacementGames *int           `json:"placement_games"`
	Tiers          jsontext.Value `json:"tiers"`
}

type resetJSON struct {
	Keep  *float64 `json:"keep,omitempty"`
	AddSD *float64 `json:"add_sd,omitempty"`
}

type tierJSON struct {
	Name string   `json:"name"`
	Min  *float64 `json:"min,omitempty"`
}

type percentileTiersJSON struct {
	Percentiles []float64 `json:"percentiles"`
	Names       []string  `json:"names,omitempty"`
}

type seasonJSON struct {
	GameType       string     `json:"game_type"`
	Context        contextOut `json:"context"`
	Season         string     `json:"season"`
	Status         string     `json:"status"`
	StartsAt       time.Time  `json:"starts_at"`
	EndsAt         time.Time  `json:"ends_at"`
	Reset          resetOut   `json:"reset"`
	PlacementGames int        `json:"placement_games"`
	Tiers          any        `json:"tiers"`
	ResetAt        *time.Time `json:"reset_at,omitempty"`
	ResetMean      *float64   `json:"reset_mean,omitempty"`
	FinalAt        *time.Time `json:"final_at,omitempty"`
}

type resetOut struct {
	Keep  float64 `json:"keep"`
	AddSD float64 `json:"add_sd"`
}

type seasonsResponse struct {
	GameType string       `json:"game_type"`
	Seasons  []seasonJSON `json:"seasons"`
}

// seasonStatus is a season's course: scheduled (not reset yet), running, or ended (its final
// standings kept).
func seasonStatus(se ratings.Season) string {
	switch {
	case !se.FinalAt.IsZero():
		return "ended"
	case se.Epoch > 0:
		return "running"
	}
	return "scheduled"
}

func newSeasonJSON(se ratings.Season) seasonJSON {
	out := seasonJSON{GameType: se.Context.GameType, Context: newContextOut(se.Context), Season: se.Name, Status: seasonStatus(se),
		StartsAt: se.StartsAt.UTC(), EndsAt: se.EndsAt.UTC(), Reset: resetOut{Keep: se.Reset.Keep, AddSD: se.Reset.AddSD},
		PlacementGames: se.PlacementGames}
	if len(se.Tiers.Fixed) > 0 {
		tiers := make([]tierJSON, len(se.Tiers.Fixed))
		for i, t := range se.Tiers.Fixed {
			tiers[i] = tierJSON{Name: t.Name}
			if i > 0 {
				tiers[i].Min = &t.Min
			}
		}
		out.Tiers = tiers
	} else {
		out.Tiers = percentileTiersJSON{Percentiles: se.Tiers.Percentiles, Names: se.Tiers.Names}
	}
	if se.Epoch > 0 {
		at, mean := se.ResetAt.UTC(), se.ResetMean
		out.ResetAt, out.ResetMean = &at, &mean
	}
	if !se.FinalAt.IsZero() {
		at := se.FinalAt.UTC()
		out.FinalAt = &at
	}
	return out
}

// definition converts the request into the service's SeasonDefinition, every fault at once.
func (req *seasonRequest) definition() (ratings.SeasonDefinition, error) {
	var f apperr.Fields
	d := ratings.SeasonDefinition{Mutators: req.Mutators, PlacementGames: req.PlacementGames}
	d.StartsAt = parseTime(&f, "starts_at", req.StartsAt)
	d.EndsAt = parseTime(&f, "ends_at", req.EndsAt)
	if req.Reset != nil {
		reset := ratings.SeasonReset{Keep: ratings.DefaultResetKeep, AddSD: ratings.DefaultResetAddSD}
		if req.Reset.Keep != nil {
			reset.Keep = *req.Reset.Keep
		}
		if req.Reset.AddSD != nil {
			reset.AddSD = *req.Reset.AddSD
		}
		d.Reset = &reset
	}
	if len(req.Tiers) > 0 && req.Tiers.Kind() != 'n' {
		tiers, err := decodeTiers(req.Tiers)
		f.Include(err)
		d.Tiers = &tiers
	}
	return d, f.Err()
}

// parseTime reads an RFC 3339 time, or says what is wrong with it.
func parseTime(f *apperr.Fields, field, s string) time.Time {
	if s == "" {
		f.Add(field, "is required: an RFC 3339 time such as 2026-01-01T00:00:00Z")
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		f.Add(field, "must be an RFC 3339 time such as 2026-01-01T00:00:00Z")
	}
	return t
}

// decodeTiers reads tiers as a list of {name, min} (fixed tiers) or as {percentiles, names}.
func decodeTiers(v jsontext.Value) (ratings.Tiers, error) {
	var t ratings.Tiers
	switch v.Kind() {
	case '[':
		var list []tierJSON
		if err := json.Unmarshal(v, &list); err != nil {
			return t, apperr.Field("tiers", "must be a list of {name, min} or {percentiles, names}: %v", err)
		}
		for _, tj := range list {
			tier := ratings.Tier{Name: tj.Name}
			if tj.Min != nil {
				tier.Min = *tj.Min
			}
			t.Fixed = append(t.Fixed, tier)
		}
		if len(list) > 0 && list[0].Min != nil {
			return t, apperr.Field("tiers[0].min", "must be left out: the first tier holds everything below the second's min")
		}
		for i, tj := range list[1:] {
			if tj.Min == nil {
				return t, apperr.Field(fmt.Sprintf("tiers[%d].min", i+1), "is required: the conservative weight (0..100) the tier starts at")
			}
		}
	case '{':
		var pt percentileTiersJSON
		dec := json.NewDecoder(strings.NewReader(string(v)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&pt); err != nil {
			return t, apperr.Field("tiers", "must be a list of {name, min} or {percentiles, names}: %v", err)
		}
		t.Percentiles, t.Names = pt.Percentiles, pt.Names
		if t.Names == nil {
			for i := range len(pt.Percentiles) + 1 {
				t.Names = append(t.Names, "Tier "+strconv.Itoa(i+1))
			}
		}
	default:
		return t, apperr.Field("tiers", "must be a list of {name, min} or {percentiles, names}")
	}
	return t, nil
}

// handlePutSeason answers PUT /v1/seasons/{game_type}/{season}: a season of the context the
// game type and mutators make, defined or redefined; 400 naming the field for a definition
// that does not hold (overlapping another season, keep outside 0..1, tiers not ascending, an
// end before the start), nothing stored.
func handlePutSeason(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gameType, name := chi.URLParam(r, "game_type"), chi.URLParam(r, "season")
		err := allowGameType(r.Context(), "game_type", gameType)
		var req seasonRequest
		if err == nil {
			req, err = decode[seasonRequest](r)
		}
		var d ratings.SeasonDefinition
		if err == nil {
			d, err = req.definition()
		}
		var se ratings.Season
		if err == nil {
			se, err = svc.PutSeason(r.Context(), gameType, name, d)
		}
		if err != nil {
			writeError(w, r, logger, renameFields(err, "context.", ""))
			return
		}
		logger.InfoContext(r.Context(), "season defined", "context", se.Context.Key(), "season", se.Name,
			"starts_at", se.StartsAt, "ends_at", se.EndsAt)
		respond(w, r, logger, http.StatusOK, newSeasonJSON(se))
	})
}

// handleListSeasons answers GET /v1/seasons/{game_type}: the game type's seasons, by context
// and start.
func handleListSeasons(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gameType := chi.URLParam(r, "game_type")
		list, err := svc.Seasons(r.Context(), gameType)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		resp := seasonsResponse{GameType: strings.ToLower(gameType), Seasons: make([]seasonJSON, len(list))}
		for i, se := range list {
			resp.Seasons[i] = newSeasonJSON(se)
		}
		respond(w, r, logger, http.StatusOK, resp)
	})
}

type playerSeasonJSON struct {
	Context      contextOut `json:"context"`
	Season       string     `json:"season"`
	StartsAt     time.Time  `json:"starts_at"`
	Final        bool       `json:"final"`
	Position     int        `json:"position"`
	Of           int        `json:"of"`
	Tier         string     `json:"tier"`
	Rating       float64    `json:"rating"`
	Conservative float64    `json:"conservative"`
	Games        int        `json:"games"`
}

type playerSeasonsResponse struct {
	ID      string             `json:"id"`
	Seasons []playerSeasonJSON `json:"seasons"`
}

// handlePlayerSeasons answers GET /v1/players/{id}/seasons: the player's final tier and
// position in every season he was ranked in, and his live one in each season under way.
func handlePlayerSeasons(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "id")
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		list, err := svc.PlayerSeasons(r.Context(), id)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		resp := playerSeasonsResponse{ID: id, Seasons: make([]playerSeasonJSON, len(list))}
		for i, st := range list {
			resp.Seasons[i] = playerSeasonJSON{Context: newContextOut(st.Context), Season: st.Season, StartsAt: st.StartsAt.UTC(),
				Final: st.Final, Position: st.Position, Of: st.Of, Tier: st.Tier, Rating: st.Rating.Skill, Conservative: st.Score,
				Games: st.Rating.SeasonGames}
		}
		respond(w, r, logger, http.StatusOK, resp)
	})
}

type tierCountJSON struct {
	Name    string `json:"name"`
	Players int    `json:"players"`
}

type tierDistributionJSON struct {
	Context contextOut      `json:"context"`
	Season  string          `json:"season"`
	Status  string          `json:"status"`
	Ranked  int             `json:"ranked"`
	Placing int             `json:"placing"`
	Tiers   []tierCountJSON `json:"tiers"`
}

// handleTierDistribution answers GET /v1/seasons/{game_type}/{season}/tiers?mutators=...: how
// many of the season's ranked players hold each tier (live while it runs, final once it
// ended), and how many are still in placement.
func handleTierDistribution(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var mutators []string
		if m := r.URL.Query().Get("mutators"); m != "" {
			mutators = strings.Split(m, ",")
		}
		c, err := svc.Context(r.Context(), chi.URLParam(r, "game_type"), mutators)
		var d ratings.Distribution
		if err == nil {
			d, err = svc.TierDistribution(r.Context(), c, chi.URLParam(r, "season"))
		}
		if err != nil {
			writeError(w, r, logger, renameFields(err, "context.", ""))
			return
		}
		resp := tierDistributionJSON{Context: newContextOut(c), Season: d.Season.Name, Status: seasonStatus(d.Season),
			Ranked: d.Ranked, Placing: d.Placing, Tiers: make([]tierCountJSON, len(d.Tiers))}
		for i, tc := range d.Tiers {
			resp.Tiers[i] = tierCountJSON{Name: tc.Tier, Players: tc.Players}
		}
		respond(w, r, logger, http.StatusOK, resp)
	})
}
