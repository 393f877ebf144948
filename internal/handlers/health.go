package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"matchmaker/api"
	"matchmaker/internal/apperr"
	"matchmaker/internal/ratings"
)

type healthResponse struct {
	Status string `json:"status"`
	Store  string `json:"store,omitempty"`
}

func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = encode(w, http.StatusOK, healthResponse{Status: "ok"})
	})
}

// handleReadyz answers 503 while the rating store cannot be reached, so a load balancer
// stops sending traffic to a replica that would fail it.
func handleReadyz(logger *slog.Logger, store ratings.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := store.Ping(ctx); err != nil {
			writeError(w, r, logger, apperr.Wrap(apperr.Unavailable, err, "the rating store is unreachable"))
			return
		}
		_ = encode(w, http.StatusOK, healthResponse{Status: "ok", Store: store.Name()})
	})
}

func handleOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("Content-Length", strconv.Itoa(len(api.OpenAPI)))
		_, _ = w.Write(api.OpenAPI)
	})
}
