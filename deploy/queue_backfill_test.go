package deploy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// queueMetrics runs a queue service with its metrics until a match, a fill and an expiry
// have given every labelled queue series one, and returns the metric families exported.
func queueMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	clock := queuetest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	svc := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Ratings: rs, Matcher: queue.TickPass{}, Clock: clock,
		Metrics: queuesvc.NewMetrics(reg)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := queue.DefaultQueue("demo")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	r := func(x float64) *float64 { return &x }
	create := func(id string, rating float64, ttl time.Duration) {
		if _, _, err := svc.CreateTicket(ctx, queue.NewTicket{Queue: "demo", TTL: ttl,
			Players: []queue.NewPlayer{{ID: id, Rating: r(rating)}}}); err != nil {
			t.Fatal(err)
		}
	}
	create("a", 1000, 0)
	create("b", 1000, 0)
	create("lonely", 1900, 2*time.Second)
	if _, _, err := svc.CreateBackfill(ctx, queue.NewBackfill{Queue: "demo", MatchID: "running", OpenSlots: []int{0, 1},
		Teams: []queue.NewBackfillTeam{{Players: []queue.NewPlayer{{ID: "r", Rating: r(500)}}}, {}}}); err != nil {
		t.Fatal(err)
	}
	create("joiner", 510, 0)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	want := []string{"matchmaker_queue_matches_total", "matchmaker_queue_backfills_total", "matchmaker_queue_backfill_joiners_total",
		"matchmaker_queue_expired_tickets_total", "matchmaker_queue_band_wait_seconds", "matchmaker_queue_searching_players_by_band",
		"matchmaker_queue_wait_seconds", "matchmaker_queue_searching_tickets"}
	missing := ""
	for range 100 { // the lonely ticket's TTL passes after 2 s of the clock's time
		clock.Advance(100 * time.Millisecond)
		wctx, stop := context.WithTimeout(ctx, 10*time.Second)
		err := clock.WaitTimer(wctx, clock.Now().Add(q.Tick)) // the tick at that time is done
		stop()
		if err != nil {
			t.Fatalf("no tick at %v: %v", clock.Now(), err)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, f := range families {
			names[f.GetName()] = true
		}
		missing = ""
		for _, w := range want {
			if !names[w] {
				missing = w
			}
		}
		if missing == "" {
			return names
		}
	}
	t.Fatalf("the queue never exported %s in 10 s of its time", missing)
	return nil
}

// The backfill dashboard has the panels the issue asks for -- waiting players by band, wait
// percentiles, backfills, expiries by reason -- and a running queue exports what they query
// (TestDashboardQueriesOnlyExportedMetrics checks every dashboard's names against the
// metrics' descriptions; this one sees the families appear).
func TestQueueBackfillDashboardHasItsPanels(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("grafana", "dashboards", "queue-backfill.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	queueMetrics(t) // fails unless a running queue exports every family below
	var titles []string
	for _, p := range dash.Panels {
		titles = append(titles, p.Title)
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	for _, want := range []string{"Searching players by rating band", "Wait percentiles", "Backfills", "Expiries by reason"} {
		if !strings.Contains(strings.Join(titles, "|"), want) {
			t.Errorf("no panel %q in %v", want, titles)
		}
	}
	for _, name := range []string{"matchmaker_queue_searching_players_by_band", "matchmaker_queue_band_wait_seconds",
		"matchmaker_queue_backfills_total", "matchmaker_queue_expired_tickets_total"} {
		if !strings.Contains(string(raw), name) {
			t.Errorf("no panel queries %s", name)
		}
	}
}
