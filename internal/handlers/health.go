package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/api"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

type healthResponse struct {
	Status string `json:"status"`
	Store  string `json:"store,omitempty"`
}

func handleHealthz(logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond(w, r, logger, http.StatusOK, healthResponse{Status: "ok"})
	})
}

// handleReadyz answers 503 while the rating store cannot be reached, so a load balancer
// stops sending traffic to a replica that would fail it.
func handleReadyz(logger *slog.Logger, svc *ratings.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := svc.Ready(ctx); err != nil {
			writeError(w, r, logger, apperr.Wrap(apperr.Unavailable, err, "the rating store is unreachable or its schema is behind this binary"))
			return
		}
		respond(w, r, logger, http.StatusOK, healthResponse{Status: "ok", Store: svc.StoreName()})
	})
}

func handleOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("Content-Length", strconv.Itoa(len(api.OpenAPI)))
		_, _ = w.Write(api.OpenAPI)
	})
}
