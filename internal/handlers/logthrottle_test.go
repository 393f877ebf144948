package handlers

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// A server answering 503s by the hundred logs a burst of warnings and then about one a second,
// not one per request.
func TestOutageWarningsAreThrottled(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	h := NewServer(Deps{Ratings: ratings.NewService(downStore{ratings.NewMemoryStore(nil)}, ratings.DefaultModel()),
		Auth: &Auth{Off: true}, Logger: logger})
	start := time.Now()
	const requests = 100
	for range requests {
		if resp := exchange(t, h, http.MethodGet, "/v1/leaderboard?game_type=ctf", "", ""); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503", resp.StatusCode)
		}
	}
	warnings := strings.Count(logs.String(), `"msg":"dependency unavailable"`)
	if most := 10 + int(time.Since(start).Seconds()) + 1; warnings == 0 || warnings > most {
		t.Fatalf("%d warnings for %d 503s within %v, want 1 to %d", warnings, requests, time.Since(start), most)
	}
}

// The next warning let through says how many like it were dropped since the last; other lines
// pass untouched.
func TestThrottledOutagesCountWhatTheyDrop(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	th := newThrottledOutages(slog.NewJSONHandler(&logs, nil))
	th.state.limit = rate.NewLimiter(rate.Every(time.Hour), 3)
	logger := slog.New(th).With("component", "test")
	for range 10 {
		logger.Warn(outageMessage, "err", "down")
		logger.Info("other")
	}
	th.state.limit.SetLimit(rate.Inf)
	logger.Warn(outageMessage, "err", "down")
	var outages, others int
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		switch rec["msg"] {
		case outageMessage:
			outages++
			last = rec
		case "other":
			others++
		}
	}
	if outages != 4 || others != 10 {
		t.Fatalf("%d outage lines and %d others, want 4 and 10:\n%s", outages, others, logs.String())
	}
	if last["similar_lines_dropped"] != float64(7) || last["component"] != "test" {
		t.Fatalf("the line after the drops: %v, want similar_lines_dropped 7 and its attributes", last)
	}
}
