package handlers

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// checkIDs checks a request's list of player ids against the one id rule
// (ratings.ValidateID) and for repeats. path(i) is the JSON path of the i-th id; it is built
// only for a fault, since a 100,000-player queue checks every id.
func checkIDs(fields *apperr.Fields, ids []string, path func(i int) string) {
	seen := make(map[string]int, len(ids))
	for i, id := range ids {
		if err := ratings.ValidateID(id); err != nil {
			fields.Add(path(i), "%s", err)
			continue
		}
		if first, dup := seen[id]; dup {
			fields.Add(path(i), "repeats %s", path(first))
			continue
		}
		seen[id] = i
	}
}

// pathParam returns the id in the route's {name} segment, unescaped once and checked against
// the id rule. chi routes on the escaped path when it differs from the default escaping of
// the path (r.URL.RawPath is set), so /v1/players/a%2Fb/ratings gives "a%2Fb" there: the id is
// "a/b". Otherwise the segment is already unescaped, and unescaping it again would turn the
// id "a%2Fb" (sent as a%252Fb) into "a/b".
func pathParam(r *http.Request, name string) (string, error) {
	id := chi.URLParam(r, name)
	if r.URL.RawPath != "" {
		var err error
		if id, err = url.PathUnescape(id); err != nil {
			return "", apperr.Field(name, "is not a valid escaped path segment")
		}
	}
	if err := ratings.ValidateID(id); err != nil {
		return "", apperr.Field(name, "%s", err)
	}
	return id, nil
}
