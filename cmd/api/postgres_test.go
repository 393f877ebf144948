package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/internal/handlers"
)

const e2eResult = `{"match_id":"e2e-1","context":{"game_type":"ctf"},"map":"face","duration_s":600,
	"teams":[{"side":"red","players":[{"id":"alice"},{"id":"bob"}]},
	         {"side":"blue","players":[{"id":"carol"},{"id":"dave"}]}],"winner":0}`

// TestRunKeepsRatingsInPostgresAcrossRestarts is the whole program on a real database: it
// migrates at start-up, records a result with an API key, and a second process started on
// the same database still has the rating; then `api rebuild` recomputes it identically.
func TestRunKeepsRatingsInPostgresAcrossRestarts(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	env := map[string]string{
		"DATABASE_URL":        url,
		"MATCHMAKER_API_KEYS": "ci:read+results+admin:" + handlers.HashKey("secret"),
	}
	call := func(base, method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer secret")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	first := startProgram(t, env)
	if code, body := call(first.base, http.MethodGet, "/readyz", ""); code != 200 || !strings.Contains(body, "postgres") {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	if code, body := call(first.base, http.MethodPost, "/v1/results", e2eResult); code != http.StatusCreated {
		t.Fatalf("POST /v1/results = %d %s", code, body)
	}
	_, before := call(first.base, http.MethodGet, "/v1/players/alice/ratings", "")
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	second := startProgram(t, env)
	_, after := call(second.base, http.MethodGet, "/v1/players/alice/ratings", "")
	// A read's uncertainty grows with the time since the player's last match (the idle drift):
	// the two reads, seconds apart, agree to six digits.
	idle := regexp.MustCompile(`"uncertainty":([0-9.]+)`)
	sixDigits := func(s string) string {
		return idle.ReplaceAllStringFunc(s, func(m string) string {
			v, _ := strconv.ParseFloat(idle.FindStringSubmatch(m)[1], 64)
			return fmt.Sprintf(`"uncertainty":%.6f`, v)
		})
	}
	if sixDigits(after) != sixDigits(before) || !strings.Contains(after, `"games":1`) {
		t.Fatalf("after a restart alice's ratings changed:\n%s\n%s", before, after)
	}
	if code, _ := call(second.base, http.MethodPost, "/v1/results", e2eResult); code != http.StatusCreated {
		t.Fatalf("replaying the result after a restart = %d", code)
	}
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}

	getenv := func(k string) string { return env[k] }
	var out, progress bytes.Buffer
	if err := run(context.Background(), []string{"api", "migrate"}, getenv, &out, io.Discard); err != nil || !strings.Contains(out.String(), "up to date") {
		t.Fatalf("api migrate: %v %q", err, out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"api", "rebuild", "-game-type", "ctf"}, getenv, &out, &progress); err != nil {
		t.Fatalf("api rebuild: %v", err)
	}
	if !strings.Contains(out.String(), "1 results replayed") || !strings.Contains(progress.String(), "replaying") {
		t.Fatalf("rebuild output %q, progress %q", out.String(), progress.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"api", "tune", "-game-type", "ctf", "-rebuild"}, getenv, &out, &progress); err != nil {
		t.Fatalf("api tune: %v", err)
	}
	if !strings.Contains(out.String(), "ctf (ns2-kalman, 1 results, 1 replays): defaults kept: too few results") ||
		!strings.Contains(out.String(), "1 results replayed") {
		t.Fatalf("tune output %q", out.String())
	}
	third := startProgram(t, env)
	defer third.stop()
	_, rebuilt := call(third.base, http.MethodGet, "/v1/players/alice/ratings", "")
	if sixDigits(rebuilt) != sixDigits(before) {
		t.Fatalf("a rebuild of one result must give the same rating:\n%s\n%s", before, rebuilt)
	}
}

func TestSubcommandsExplainWhatTheyNeed(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	for _, args := range [][]string{{"api", "migrate"}, {"api", "rebuild", "-game-type", "ctf"}, {"api", "tune", "-game-type", "ctf"}} {
		err := run(context.Background(), args, none, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
			t.Errorf("%v without a database: %v", args, err)
		}
	}
}
