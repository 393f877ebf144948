package handlers

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func TestParseAPIKeysGameTypes(t *testing.T) {
	t.Parallel()
	hash := HashKey("secret")
	keys, err := ParseAPIKeys("eu:match+results:" + hash + ":CTF+tdm+ctf,all:admin:" + HashKey("other"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys[0].GameTypes, []string{"ctf", "tdm"}) || keys[1].GameTypes != nil {
		t.Fatalf("game types %q and %q, want [ctf tdm] and none (every game type)", keys[0].GameTypes, keys[1].GameTypes)
	}
	for _, bad := range []string{
		"eu:match:" + hash + ":",             // an empty list
		"eu:match:" + hash + ":ctf+",         // an empty game type
		"eu:match:" + hash + ":Capture Flag", // not a game type
		"eu:match:" + hash + ":ctf:x",        // a fifth field
	} {
		if _, err := ParseAPIKeys(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// gameTypeServer has a key restricted to ctf (match and results), an admin key restricted to
// ctf, and a key of every scope and game type; its queue service ticks.
func gameTypeServer(t *testing.T) http.Handler {
	t.Helper()
	keys, err := ParseAPIKeys("eu:match+results:" + HashKey("eu-key") + ":ctf," +
		"ops:admin:" + HashKey("ops-key") + ":ctf," +
		"all:read+match+results+admin:" + HashKey("all-key"))
	if err != nil {
		t.Fatal(err)
	}
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	qs := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: queue.TickPass{},
		Config: queuesvc.Config{QueueRefresh: 20 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- qs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return NewServer(Deps{Ratings: rs, Queue: qs, Auth: &Auth{Keys: keys}})
}

// A key restricted to some game types is refused (403 naming the game type's field) whatever
// it does to another game type: results, compute requests that name it, tickets in its
// queues, and for an admin key rebuilds, tunings, corrections, queue definitions (the new
// one's game type and the stored one's) and the mutator policy, which every game type shares.
func TestKeyRestrictedToGameTypes(t *testing.T) {
	t.Parallel()
	h := gameTypeServer(t)
	bearer := func(key string) []string { return []string{"Authorization", "Bearer " + key} }
	tdmResult := strings.ReplaceAll(resultBody("t1", 0), `"game_type":"ctf"`, `"game_type":"tdm"`)
	for _, setup := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/results", tdmResult},
		{http.MethodPost, "/v1/results", resultBody("c1", 0)},
		{http.MethodPut, "/v1/queues/duel-tdm", strings.Replace(duelQueue, `"ctf"`, `"tdm"`, 1)},
		{http.MethodPut, "/v1/queues/duel", duelQueue},
	} {
		if resp := exchange(t, h, setup.method, setup.path, "application/json", setup.body, bearer("all-key")...); resp.StatusCode >= 300 {
			t.Fatalf("%s %s with the unrestricted key: %d %s", setup.method, setup.path, resp.StatusCode, readAll(t, resp))
		}
	}
	matchmake := func(gameType string) string {
		return `{"team_size":1,"context":{"game_type":"` + gameType + `"},"players":` + queuedPlayersJSON(1000, 1010) + `}`
	}
	predict := func(gameType string) string {
		return `{"context":{"game_type":"` + gameType + `"},"map":"m","teams":[{"side":"red","players":[{"id":"alice"}]},{"side":"blue","players":[{"id":"bob"}]}]}`
	}
	ticket := `{"players":[{"id":"zed","rating":1000}]}`
	tests := []struct {
		name, key, method, path, body string
		want                          int
		field                         string
	}{
		{"result in its game type", "eu-key", http.MethodPost, "/v1/results", resultBody("c2", 1), http.StatusCreated, ""},
		{"result in another", "eu-key", http.MethodPost, "/v1/results", strings.ReplaceAll(resultBody("t2", 0), `"game_type":"ctf"`, `"game_type":"TDM"`), http.StatusForbidden, "context.game_type"},
		{"matchmake in its game type", "eu-key", http.MethodPost, "/v1/matchmake", matchmake("ctf"), http.StatusOK, ""},
		{"matchmake in another", "eu-key", http.MethodPost, "/v1/matchmake", matchmake("tdm"), http.StatusForbidden, "context.game_type"},
		{"matchmake without a context", "eu-key", http.MethodPost, "/v1/matchmake", `{"team_size":1,"players":` + queuedPlayersJSON(1000, 1010) + `}`, http.StatusOK, ""},
		{"teams in another", "eu-key", http.MethodPost, "/v1/teams", `{"context":{"game_type":"tdm"},"players":[{"id":"a","weight":50},{"id":"b","weight":60}]}`, http.StatusForbidden, "context.game_type"},
		{"predict in another", "eu-key", http.MethodPost, "/v1/predict", predict("tdm"), http.StatusForbidden, "context.game_type"},
		{"predict in its game type", "eu-key", http.MethodPost, "/v1/predict", predict("ctf"), http.StatusOK, ""},
		{"ticket in a queue of another", "eu-key", http.MethodPost, "/v1/queues/duel-tdm/tickets", ticket, http.StatusForbidden, "game_type"},
		{"ticket in a queue of its own", "eu-key", http.MethodPost, "/v1/queues/duel/tickets", ticket, http.StatusCreated, ""},
		{"rebuild of another", "ops-key", http.MethodPost, "/v1/ratings/rebuild?game_type=tdm", "", http.StatusForbidden, "game_type"},
		{"rebuild of its own", "ops-key", http.MethodPost, "/v1/ratings/rebuild?game_type=ctf", "", http.StatusOK, ""},
		{"tune of another", "ops-key", http.MethodPost, "/v1/ratings/tune?game_type=tdm", "", http.StatusForbidden, "game_type"},
		{"correction of another", "ops-key", http.MethodDelete, "/v1/results/t1", "", http.StatusForbidden, "game_type"},
		{"correction of its own", "ops-key", http.MethodDelete, "/v1/results/c1", "", http.StatusOK, ""},
		{"queue of another", "ops-key", http.MethodPut, "/v1/queues/q2", strings.Replace(duelQueue, `"ctf"`, `"tdm"`, 1), http.StatusForbidden, "context.game_type"},
		{"another's queue taken over", "ops-key", http.MethodPut, "/v1/queues/duel-tdm", duelQueue, http.StatusForbidden, "game_type"},
		{"another's queue deleted", "ops-key", http.MethodDelete, "/v1/queues/duel-tdm", "", http.StatusForbidden, "game_type"},
		{"the mutator policy", "ops-key", http.MethodPut, "/v1/mutators/instagib", `{"affects_gameplay":true}`, http.StatusForbidden, "name"},
		{"its own queue redefined", "ops-key", http.MethodPut, "/v1/queues/duel", duelQueue, http.StatusOK, ""},
		{"an unrestricted key", "all-key", http.MethodPost, "/v1/results", strings.ReplaceAll(resultBody("t3", 0), `"game_type":"ctf"`, `"game_type":"tdm"`), http.StatusCreated, ""},
	}
	for _, tt := range tests {
		contentType := ""
		if tt.body != "" {
			contentType = "application/json"
		}
		resp := exchange(t, h, tt.method, tt.path, contentType, tt.body, bearer(tt.key)...)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d %s, want %d", tt.name, resp.StatusCode, readAll(t, resp), tt.want)
			continue
		}
		if tt.field != "" {
			if p := readProblem(t, resp); !hasField(p, tt.field) {
				t.Errorf("%s: %+v, want a problem naming %s", tt.name, p, tt.field)
			}
		}
	}
	// The refused result and correction changed nothing: t1 is still stored, t2 never was.
	if resp := exchange(t, h, http.MethodDelete, "/v1/results/t2", "", "", bearer("all-key")...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the refused result t2: %d, want 404 (not stored)", resp.StatusCode)
	}
	if resp := exchange(t, h, http.MethodDelete, "/v1/results/t1", "", "", bearer("all-key")...); resp.StatusCode != http.StatusOK {
		t.Errorf("t1 after the refused correction: %d, want 200 (still stored)", resp.StatusCode)
	}
}
