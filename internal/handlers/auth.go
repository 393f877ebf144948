package handlers

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Scope is what a key may do.
type Scope string

const (
	ScopeRead    Scope = "read"    // read ratings, leaderboards, bot weights
	ScopeMatch   Scope = "match"   // matchmaking and team splits
	ScopeResults Scope = "results" // write match results
	ScopeAdmin   Scope = "admin"   // mutator policy, rebuilds
)

var allScopes = []Scope{ScopeRead, ScopeMatch, ScopeResults, ScopeAdmin}

// APIKey is one configured key: its name (for logs), its scopes, the SHA-256 of the secret
// and, optionally, the game types it may use. The secret itself is never configured or kept.
type APIKey struct {
	Name   string
	Scopes []Scope
	Hash   [sha256.Size]byte
	// GameTypes, when not nil, are the only game types (canonical) whose results the key may
	// post, whose ratings its compute requests may read, whose queues it may put tickets in
	// and, for an admin key, which it may rebuild, tune, correct or define queues of.
	GameTypes []string
	// caller is "key:" and Name, the key's rate-limit bucket and slots (callerOf), made once
	// (ParseAPIKeys); a key made otherwise makes it at each request.
	caller string
}

// callerID is the caller the key's requests are counted as.
func (k *APIKey) callerID() string {
	if k.caller != "" {
		return k.caller
	}
	return "key:" + k.Name
}

// keyOf is the key that authenticated the request of ctx, nil for one let in without a key.
func keyOf(ctx context.Context) *APIKey {
	key, _ := ctx.Value(apiKeyKey).(*APIKey)
	return key
}

// Auth decides who may call what.
type Auth struct {
	// Off opens every endpoint (MATCHMAKER_AUTH=off, development only).
	Off  bool
	Keys []APIKey
}

// ParseAPIKeys reads MATCHMAKER_API_KEYS: comma-separated NAME:SCOPES:SHA256HEX entries,
// scopes joined by "+", e.g. "ci:read+match+results+admin:9f86d0...", each optionally
// followed by :GAMETYPES, game types joined by "+" ("eu-ctf:match+results:9f86d0...:ctf+tdm"),
// the only ones the key may use. An entry without it may use every game type.
func ParseAPIKeys(s string) ([]APIKey, error) {
	var keys []APIKey
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.Split(entry, ":")
		if len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
			return nil, fmt.Errorf("API key entry %d: want NAME:SCOPES:SHA256HEX or NAME:SCOPES:SHA256HEX:GAMETYPES", len(keys)+1)
		}
		k := APIKey{Name: parts[0], caller: "key:" + parts[0]}
		for sc := range strings.SplitSeq(parts[1], "+") {
			if !slices.Contains(allScopes, Scope(sc)) {
				return nil, fmt.Errorf("API key %q: unknown scope %q (want read, match, results or admin)", k.Name, sc)
			}
			k.Scopes = append(k.Scopes, Scope(sc))
		}
		raw, err := hex.DecodeString(parts[2])
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("API key %q: the hash must be 64 hex digits (sha256 of the key)", k.Name)
		}
		copy(k.Hash[:], raw)
		if len(parts) == 4 {
			if k.GameTypes, err = parseGameTypes(parts[3]); err != nil {
				return nil, fmt.Errorf("API key %q: %w", k.Name, err)
			}
		}
		if slices.ContainsFunc(keys, func(o APIKey) bool { return o.Name == k.Name }) {
			return nil, fmt.Errorf("API key %q is configured twice", k.Name)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// parseGameTypes reads a key's allow-list: game types joined by "+", each by the game type
// rule, kept canonical (lower case) and sorted.
func parseGameTypes(s string) ([]string, error) {
	var out []string
	for gt := range strings.SplitSeq(s, "+") {
		if err := ratings.ValidateName(gt); err != nil {
			return nil, fmt.Errorf("game type %q: %w", gt, err)
		}
		out = append(out, strings.ToLower(gt))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// HashKey is the SHA-256 hex of a key, the form MATCHMAKER_API_KEYS wants.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// open reports whether scope needs no key: with no keys configured, reading and computing
// stay open so a first `go run` works, and writing and admin stay shut.
func (a *Auth) open(scope Scope) bool {
	if a.Off {
		return true
	}
	return len(a.Keys) == 0 && (scope == ScopeRead || scope == ScopeMatch)
}

// authenticate finds the key whose hash matches the bearer token. Every configured hash is
// compared, in constant time, so the answer's timing says nothing about which one matched.
func (a *Auth) authenticate(r *http.Request) (*APIKey, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return nil, apperr.New(apperr.Unauthorized, "this endpoint needs an API key: Authorization: Bearer <key>")
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return nil, apperr.New(apperr.Unauthorized, "the Authorization header must be Bearer <key>")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	var found *APIKey
	for i := range a.Keys {
		if subtle.ConstantTimeCompare(sum[:], a.Keys[i].Hash[:]) == 1 {
			found = &a.Keys[i]
		}
	}
	if found == nil {
		return nil, apperr.New(apperr.Unauthorized, "the API key is not valid")
	}
	return found, nil
}

// allows reports whether r may use scope: the scope is open, or r's key has it.
func (a *Auth) allows(r *http.Request, scope Scope) bool {
	if a.open(scope) {
		return true
	}
	key, err := a.authenticate(r)
	return err == nil && slices.Contains(key.Scopes, scope)
}

// authorize lets a request through only with a key that has scope (or when scope is open):
// it answers the request itself (ok false) otherwise, and returns the request's context with
// the key and, for the queue, its Caller (ctx as it is for an open scope). Failures are
// limited per address and logged (see failedAuth).
func authorize(w http.ResponseWriter, r *http.Request, a *Auth, failures *failedAuth, scope Scope, d Deps) (_ context.Context, ok bool) {
	ctx := r.Context()
	if a.open(scope) {
		return ctx, true
	}
	key, err := a.authenticate(r)
	if err != nil {
		if !failures.refuse(w, r) {
			failures.failed(r, scope)
			writeError(w, r, d.Logger, err)
		}
		return ctx, false
	}
	if !slices.Contains(key.Scopes, scope) {
		writeError(w, r, d.Logger, apperr.New(apperr.Forbidden, "the key %q lacks the %q scope", key.Name, scope))
		return ctx, false
	}
	ctx = context.WithValue(ctx, apiKeyKey, key)
	// The key owns what it creates in the queue, and sees only that unless it is an admin
	// key, or a read key that reads every ticket (DESIGN, "Ownership").
	return queuesvc.WithCaller(ctx, queuesvc.Caller{Owner: key.Name, Admin: slices.Contains(key.Scopes, ScopeAdmin),
		Reader: slices.Contains(key.Scopes, ScopeRead), GameTypes: key.GameTypes}), true
}

// allowEveryGameType refuses, with a 403 naming field, a change that holds for every game type
// (the mutator policy) to a key restricted to some of them.
func allowEveryGameType(ctx context.Context, field string) error {
	key := keyOf(ctx)
	if key == nil || key.GameTypes == nil {
		return nil
	}
	return &apperr.Error{Code: apperr.Forbidden, Message: fmt.Sprintf("the key %q is restricted to game types (%s) and may not change what holds for every game type", key.Name, strings.Join(key.GameTypes, ", ")),
		Fields: []apperr.FieldError{{Field: field, Message: "is shared by every game type: only a key without a game-type list may change it"}}}
}

// allowGameType refuses, with a 403 naming field, a request about a game type that the key
// that authenticated it may not use (APIKey.GameTypes). A request let in without a key (no
// keys configured, or auth off) may use every game type; so may a key without a list.
func allowGameType(ctx context.Context, field, gameType string) error {
	key := keyOf(ctx)
	if key == nil || key.GameTypes == nil || slices.Contains(key.GameTypes, strings.ToLower(gameType)) {
		return nil
	}
	return &apperr.Error{Code: apperr.Forbidden, Message: fmt.Sprintf("the key %q may not use game type %q", key.Name, gameType),
		Fields: []apperr.FieldError{{Field: field, Message: fmt.Sprintf("must be one of the key's game types (%s)", strings.Join(key.GameTypes, ", "))}}}
}
