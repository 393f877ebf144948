package handlers

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// problem is an RFC 9457 problem document.
type problem struct {
	Type      string              `json:"type"`
	Title     string              `json:"title"`
	Status    int                 `json:"status"`
	Detail    string              `json:"detail,omitempty"`
	RequestID string              `json:"request_id,omitempty"`
	Errors    []apperr.FieldError `json:"errors,omitempty"`
	// RetryAt is when a 429's caller may try again, when the service knows (a player's
	// dodge cooldown).
	RetryAt *time.Time `json:"retry_at,omitempty"`
}

// problemKind is what the service says about one error code.
type problemKind struct {
	status int
	slug   string
	title  string
}

// problemKinds is the one place that maps domain error codes to HTTP.
var problemKinds = map[apperr.Code]problemKind{
	apperr.Invalid:         {http.StatusBadRequest, "invalid", "Invalid request"},
	apperr.NotFound:        {http.StatusNotFound, "not-found", "Not found"},
	apperr.Conflict:        {http.StatusConflict, "conflict", "Conflict"},
	apperr.Unauthorized:    {http.StatusUnauthorized, "unauthorized", "Unauthorized"},
	apperr.Forbidden:       {http.StatusForbidden, "forbidden", "Forbidden"},
	apperr.TooLarge:        {http.StatusRequestEntityTooLarge, "too-large", "Request too large"},
	apperr.Unsupported:     {http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type"},
	apperr.NotAllowed:      {http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed"},
	apperr.Gone:            {http.StatusGone, "gone", "Gone"},
	apperr.Unavailable:     {http.StatusServiceUnavailable, "unavailable", "Service unavailable"},
	apperr.TooManyRequests: {http.StatusTooManyRequests, "too-many-requests", "Too many requests"},
	apperr.Internal:        {http.StatusInternalServerError, "internal", "Internal error"},
}

// retryAfterSeconds is the Retry-After of every 503: an outage of the database that outlasts
// the store's deadline (seconds) is not over in less, and a client that waits this long
// before its retry does not pile onto a database that is coming back.
const retryAfterSeconds = "2"

// writeError answers with the problem document for err. Only internal errors and outages are
// logged: a client's mistake is the client's to read, not ours to page on.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	code := apperr.CodeOf(err)
	kind, ok := problemKinds[code]
	if !ok {
		kind = problemKinds[apperr.Internal]
	}
	p := problem{
		Type:      "urn:matchmaker:problem:" + kind.slug,
		Title:     kind.title,
		Status:    kind.status,
		RequestID: requestIDFrom(r.Context()),
	}
	var e *apperr.Error
	retryAfter := time.Duration(0)
	switch {
	case code == apperr.Internal:
		p.Detail = "an internal error occurred; quote the request id when reporting it"
		logger.ErrorContext(r.Context(), "internal error", "err", err, "request_id", p.RequestID,
			"method", r.Method, "path", r.URL.Path)
	case errors.As(err, &e):
		p.Detail = e.Message
		p.Errors = e.Fields
		if !e.RetryAt.IsZero() {
			p.RetryAt, retryAfter = new(e.RetryAt.UTC()), e.RetryAfter
		}
		switch {
		case code == apperr.Unavailable && r.Context().Err() != nil:
			// The client hung up (a long-poll's or a stream's client going away): nothing
			// of ours to page on.
			logger.DebugContext(r.Context(), "the client went away", "err", err, "request_id", p.RequestID)
		case code == apperr.Unavailable:
			logger.WarnContext(r.Context(), outageMessage, "err", err, "request_id", p.RequestID)
		}
	}
	switch code {
	case apperr.Unauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="matchmaker"`)
	case apperr.Unavailable:
		w.Header().Set("Retry-After", retryAfterSeconds)
	case apperr.TooManyRequests:
		switch {
		case p.RetryAt != nil:
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retryAfter.Seconds())))))
		case w.Header().Get("Retry-After") == "": // a rate limiter sets its own
			w.Header().Set("Retry-After", "1")
		}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(kind.status)
	_ = json.NewEncoder(w).Encode(p)
}
