package handlers

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"matchmaker/internal/apperr"
	"matchmaker/internal/ratings"
)

type mutatorRequest struct {
	AffectsGameplay *bool `json:"affects_gameplay"`
}

type mutatorJSON struct {
	Name            string `json:"name"`
	Status          string `json:"status"`
	AffectsGameplay bool   `json:"affects_gameplay"`
}

type mutatorsResponse struct {
	Mutators []mutatorJSON `json:"mutators"`
}

type rebuildResponse struct {
	GameType  string  `json:"game_type"`
	Results   int     `json:"results"`
	Contexts  int     `json:"contexts"`
	Ratings   int     `json:"ratings"`
	ElapsedMS float64 `json:"elapsed_ms"`
}

func newMutatorJSON(m ratings.MutatorInfo) mutatorJSON {
	return mutatorJSON{Name: m.Name, Status: m.Status.String(), AffectsGameplay: m.Status == ratings.MutatorGameplay}
}

// handleListMutators answers GET /v1/mutators: every mutator seen or classified, with the
// unknown ones an admin still has to decide about.
func handleListMutators(logger *slog.Logger, store ratings.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		policy, err := store.Policy(r.Context())
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		list := policy.Mutators()
		resp := mutatorsResponse{Mutators: make([]mutatorJSON, len(list))}
		for i, m := range list {
			resp.Mutators[i] = newMutatorJSON(m)
		}
		_ = encode(w, http.StatusOK, resp)
	})
}

// handleSetMutator answers PUT /v1/mutators/{name}: whether the mutator splits rating
// contexts. Stored ratings do not move until a rebuild re-splits the history.
func handleSetMutator(logger *slog.Logger, store ratings.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[mutatorRequest](r)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		if req.AffectsGameplay == nil {
			writeError(w, r, logger, apperr.Field("affects_gameplay", "is required"))
			return
		}
		m, err := store.SetMutator(r.Context(), chi.URLParam(r, "name"), *req.AffectsGameplay)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		_ = encode(w, http.StatusOK, newMutatorJSON(m))
	})
}

// handleRebuild answers POST /v1/ratings/rebuild?game_type=...: every context of the game type
// recomputed from the stored history, deterministically.
func handleRebuild(logger *slog.Logger, store ratings.Store, model ratings.Model) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gameType := r.URL.Query().Get("game_type")
		if gameType == "" {
			writeError(w, r, logger, apperr.Field("game_type", "is required"))
			return
		}
		if _, err := ratings.NewContext(gameType, nil); err != nil {
			writeError(w, r, logger, renameFields(err, "context.", ""))
			return
		}
		start := time.Now()
		report, err := store.Rebuild(r.Context(), gameType, ratings.Replayer(model), nil)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		logger.InfoContext(r.Context(), "ratings rebuilt", "game_type", gameType, "results", report.Results,
			"contexts", report.Contexts, "ratings", report.Ratings)
		_ = encode(w, http.StatusOK, rebuildResponse{GameType: gameType, Results: report.Results,
			Contexts: report.Contexts, Ratings: report.Ratings, ElapsedMS: float64(time.Since(start).Microseconds()) / 1000})
	})
}
