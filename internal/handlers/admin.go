package handlers

import (
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
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
func handleListMutators(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, err := svc.Mutators(r.Context())
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		resp := mutatorsResponse{Mutators: make([]mutatorJSON, len(list))}
		for i, m := range list {
			resp.Mutators[i] = newMutatorJSON(m)
		}
		respond(w, r, logger, http.StatusOK, resp)
	})
}

// handleSetMutator answers PUT /v1/mutators/{name}: whether the mutator splits rating
// contexts. Stored ratings do not move until a rebuild re-splits the history.
func handleSetMutator(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := allowEveryGameType(r.Context(), "name"); err != nil {
			writeError(w, r, logger, err)
			return
		}
		req, err := decode[mutatorRequest](r)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		if req.AffectsGameplay == nil {
			writeError(w, r, logger, apperr.Field("affects_gameplay", "is required"))
			return
		}
		m, err := svc.SetMutator(r.Context(), chi.URLParam(r, "name"), *req.AffectsGameplay)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, newMutatorJSON(m))
	})
}

// handleRebuild answers POST /v1/ratings/rebuild?game_type=...: every context of the game type
// recomputed from the stored history, deterministically.
func handleRebuild(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gameType := r.URL.Query().Get("game_type")
		if err := allowGameType(r.Context(), "game_type", gameType); err != nil {
			writeError(w, r, logger, err)
			return
		}
		start := time.Now()
		report, err := svc.Rebuild(r.Context(), gameType, nil)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		logger.InfoContext(r.Context(), "ratings rebuilt", "game_type", gameType, "results", report.Results,
			"contexts", report.Contexts, "ratings", report.Ratings)
		respond(w, r, logger, http.StatusOK, rebuildResponse{GameType: gameType, Results: report.Results,
			Contexts: report.Contexts, Ratings: report.Ratings, ElapsedMS: float64(time.Since(start).Microseconds()) / 1000})
	})
}

type tunedParamsJSON struct {
	SkillSD          float64 `json:"skill_sd"`
	NewcomerSkill    float64 `json:"newcomer_skill"`
	SkillDrift       float64 `json:"skill_drift"`
	SkillDriftPerDay float64 `json:"skill_drift_per_day"`
	Noise            float64 `json:"noise"`
	BiasPrior        float64 `json:"bias_prior"`
	OffsetSD         float64 `json:"offset_sd"`
	SizeExponent     float64 `json:"size_exponent"`
	Memory           float64 `json:"memory,omitempty"`
}

type contextTuningJSON struct {
	Context       string          `json:"context"`
	Model         string          `json:"model"`
	Results       int             `json:"results"`
	Replays       int             `json:"replays"`
	Accepted      bool            `json:"accepted"`
	Reason        string          `json:"reason,omitempty"`
	FitBefore     float64         `json:"fit_log_loss_before"`
	FitAfter      float64         `json:"fit_log_loss_after"`
	HeldOutBefore float64         `json:"held_out_log_loss_before"`
	HeldOutAfter  float64         `json:"held_out_log_loss_after"`
	Default       tunedParamsJSON `json:"default"`
	Params        tunedParamsJSON `json:"params"`
	TunedAt       *time.Time      `json:"tuned_at,omitempty"`
	Auto          bool            `json:"auto,omitempty"`
}

func newContextTuningJSON(c ratings.Context, model string, rep ratings.TuneReport) contextTuningJSON {
	return contextTuningJSON{Context: c.Key(), Model: model, Results: rep.Results,
		Replays: rep.Evaluations, Accepted: rep.Accepted, Reason: rep.Reason,
		FitBefore: rep.FitBefore, FitAfter: rep.FitAfter, HeldOutBefore: rep.HeldOutBefore, HeldOutAfter: rep.HeldOutAfter,
		Default: tunedParamsJSON(rep.Default), Params: tunedParamsJSON(rep.Params)}
}

// handleTunings answers GET /v1/ratings/tune?game_type=...: the game type's stored tunings,
// by context, each with when it was fitted and whether by the service itself.
func handleTunings(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gameType := r.URL.Query().Get("game_type")
		stored, err := svc.Tunings(r.Context(), gameType)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		keys := slices.Sorted(maps.Keys(stored))
		resp := tuneResponse{GameType: strings.ToLower(gameType), Contexts: make([]contextTuningJSON, len(keys))}
		for i, k := range keys {
			t := stored[k]
			resp.Contexts[i] = newContextTuningJSON(t.Context, t.Model, t.Report)
			resp.Contexts[i].Params, resp.Contexts[i].Auto = tunedParamsJSON(t.Params), t.Auto
			if !t.At.IsZero() {
				at := t.At.UTC()
				resp.Contexts[i].TunedAt = &at
			}
		}
		respond(w, r, logger, http.StatusOK, resp)
	})
}

type tuneResponse struct {
	GameType  string              `json:"game_type"`
	Contexts  []contextTuningJSON `json:"contexts"`
	ElapsedMS float64             `json:"elapsed_ms"`
}

// handleTune answers POST /v1/ratings/tune?game_type=...: each context's hyperparameters
// fitted to its history and stored (ratings.Service.Tune).
func handleTune(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gameType := r.URL.Query().Get("game_type")
		if err := allowGameType(r.Context(), "game_type", gameType); err != nil {
			writeError(w, r, logger, err)
			return
		}
		start := time.Now()
		reports, err := svc.Tune(r.Context(), gameType)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		resp := tuneResponse{GameType: gameType, Contexts: make([]contextTuningJSON, len(reports))}
		for i, ct := range reports {
			rep := ct.Report
			resp.Contexts[i] = newContextTuningJSON(ct.Context, ct.Model, rep)
			logger.InfoContext(r.Context(), "ratings tuned", "context", ct.Context.Key(), "results", rep.Results,
				"accepted", rep.Accepted, "held_out_log_loss_before", rep.HeldOutBefore, "held_out_log_loss_after", rep.HeldOutAfter)
		}
		resp.ElapsedMS = float64(time.Since(start).Microseconds()) / 1000
		respond(w, r, logger, http.StatusOK, resp)
	})
}
