package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A very short soak of the real binary, each way of waiting in turn (streams per ticket both
// of the whole feed and of the ticket's own events): 2 replicas on a fresh database of
// TEST_DATABASE_URL's server, 20 arrivals/s for 3 s. The summary must be sane: tickets
// created and matched, every matched ticket's latency measured, a result posted for every
// match seen, no 5xx and no failed creation, the database sampled, and the fresh database
// gone afterwards.
func TestSoakBriefly(t *testing.T) {
	if testing.Short() {
		t.Skip("three soaks of the whole program (about 35 s): not under -short")
	}
	server := os.Getenv("TEST_DATABASE_URL")
	if server == "" {
		msg := "no TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable): the soak needs a Postgres server to create its database on"
		if os.Getenv("MATCHMAKER_REQUIRE_TEST_DB") == "1" {
			t.Fatal(msg + "; MATCHMAKER_REQUIRE_TEST_DB=1 requires one")
		}
		t.Skip(msg)
	}
	bin := filepath.Join(t.TempDir(), "api")
	build := exec.Command("go", "build", "-o", bin, "./cmd/api")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/api: %v\n%s", err, out)
	}
	// One after the other: each holds 2 x (5 + 2) connections of a server that other test
	// packages share.
	for _, way := range [][]string{{"longpoll"}, {"sse"}, {"sse", "-ticket-streams"}, {"sse", "-backends", "2"}} {
		wait := way[0]
		t.Run(strings.Join(way, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			args := []string{"-bin", bin, "-server-url", server, "-wait", wait, "-rate", "20", "-duration", "3s",
				"-drain", "4s", "-rating-sd", "30", "-tick-ms", "200", "-every", "1s", "-db-conns", "5", "-json"}
			args = append(args, way[1:]...)
			err := run(ctx, args, func(string) string { return "" }, &stdout, &stderr)
			t.Log(stderr.String())
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			var s summary
			if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
				t.Fatalf("the -json summary: %v\n%s", err, stdout.String())
			}
			matched := s.Outcomes["matched"]
			via, backends := 0, slices.Contains(way, "-backends")
			for _, d := range s.MatchToClientVia {
				via += d.N
			}
			checks := []struct {
				ok   bool
				what string
			}{
				{s.Due >= 55 && s.Due <= 61, "about 60 arrivals due"},
				{s.Created == s.Due && s.FailedCreations == 0, "every arrival created"},
				{s.CreatesPerS > 15 && s.CreatesPerS < 25, "creations at about 20/s"},
				{matched >= s.Created/2 && s.Matches > 0, "most tickets matched"},
				{s.MatchToClient.N == int(matched) && s.MatchToClient.P50 > 0 && s.MatchToClient.Max < 10000, "a latency per matched ticket, under 10 s"},
				{s.MatchToFirstClient.N == s.Matches, "a first-client latency per match"},
				{!backends && len(s.MatchToClientVia) == 0 || backends && len(s.MatchToClientVia) == 2 && via == int(matched),
					"with -backends, each matched ticket's latency by its stream's replica"},
				{s.RefFromMatch == int(matched) && s.RefMismatches == 0, "every ticket timed from its match's created_at, which its ticket or event agrees with"},
				{s.ResultsPosted == int64(s.Matches) && s.Results["posted"] == s.Matches, "a result posted per match"},
				{s.Errors5xx == 0 && len(s.Errors) == 0, "no errors"},
				{s.DBMatches >= int64(s.Matches) && s.DBTickets["matched"] == matched, "the database holds what the clients saw"},
				{s.PeakWaiting > 0 && s.PeakWaiting <= s.Created, "waiters counted"},
				{s.DBConnectionsPeak > 0 && s.Ticks > 0 && s.TransactionsPerTick > 0 && s.DBTransactionsPerS > 0, "the database sampled"},
				{s.DBCPUSeconds >= 0, "the database's backends' CPU read (the server is local)"},
				{len(s.Replicas) == 2, "two replicas"},
				{len(s.Timeline) >= 4, "a timeline"},
			}
			for _, c := range checks {
				if !c.ok {
					t.Errorf("%s: no", c.what)
				}
			}
			for _, r := range s.Replicas {
				if r.RSSPeakMiB <= 0 || r.GoroutinesPeak <= 0 || r.ExitedEarly != "" {
					t.Errorf("replica %d: %+v", r.Index, r)
				}
			}
			if !s.Settings.FreshDB || !strings.HasPrefix(s.Settings.Database, "soak_") {
				t.Fatalf("database %q, fresh %v: want a fresh soak_ database", s.Settings.Database, s.Settings.FreshDB)
			}
			conn, err := pgx.Connect(ctx, server)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var left bool
			if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, s.Settings.Database).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left {
				t.Errorf("database %s was not dropped", s.Settings.Database)
			}
		})
	}
}

func TestParseConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	const local = "postgres://postgres@127.0.0.1:5432/postgres"
	c, err := parseConfig(nil, env(map[string]string{"TEST_DATABASE_URL": local}), new(bytes.Buffer))
	if err != nil || c.serverURL != local || c.databaseURL != "" || c.replicas != 2 || c.rate != 300 || c.duration != 10*time.Minute || c.wait != "longpoll" {
		t.Fatalf("defaults with TEST_DATABASE_URL: %+v, %v", c, err)
	}
	c, err = parseConfig(nil, env(map[string]string{"TEST_DATABASE_URL": local, "DATABASE_URL": local + "2"}), new(bytes.Buffer))
	if err != nil || c.databaseURL != local+"2" || c.serverURL != "" {
		t.Fatalf("DATABASE_URL is used as it is, before TEST_DATABASE_URL: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{}, // no database
		{"-database-url", "postgres://db.example.com/x"}, // not this machine
		{"-server-url", local, "-wait", "poll"},
		{"-server-url", local, "-backends", "4"},  // backends without sse
		{"-server-url", local, "-ticket-streams"}, // ticket streams without sse
		{"-server-url", local, "-wait", "sse", "-backends", "4", "-ticket-streams"},
		{"-server-url", local, "-rate", "0"},
		{"-server-url", local, "-env", "NOEQUALS"},
		{"-server-url", local, "-database-url", local},
		{"-server-url", local, "extra"},
		{"-server-url", local, "-interval", "5:25"},
		{"-server-url", local, "-interval", "0:x"},
	} {
		if _, err := parseConfig(bad, env(nil), new(bytes.Buffer)); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
	if _, err := parseConfig([]string{"-database-url", "host=/var/run/postgresql dbname=x"}, env(nil), new(bytes.Buffer)); err != nil {
		t.Errorf("a Unix socket is this machine: %v", err)
	}
}

func TestParseSteps(t *testing.T) {
	got, err := parseSteps("0:25,10:50,30:150")
	if want := `[{"after_s":0,"value":25},{"after_s":10,"value":50},{"after_s":30,"value":150}]`; err != nil || got != want {
		t.Errorf("got %s, %v; want %s", got, err, want)
	}
}

func TestPromTextValue(t *testing.T) {
	p := promText(`# HELP go_goroutines Number of goroutines.
go_goroutines 42
go_goroutines_extra 7
matchmaker_queue_tick_duration_seconds_count{queue="a"} 10
matchmaker_queue_tick_duration_seconds_count{queue="b"} 5
matchmaker_queue_leader{queue="a"} 1
`)
	for _, c := range []struct {
		metric, label string
		want          float64
	}{
		{"go_goroutines", "", 42},
		{"matchmaker_queue_tick_duration_seconds_count", `queue="a"`, 10},
		{"matchmaker_queue_tick_duration_seconds_count", "", 15},
		{"matchmaker_queue_leader", `queue="b"`, -1},
		{"missing", "", -1},
	} {
		if got := p.value(c.metric, c.label); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.metric, c.label, got, c.want)
		}
	}
}

func TestTicketIDOf(t *testing.T) {
	data := []byte(`{"seq":41,"queue":"q","type":"matched","ticket_id":"tk-3qf0","match_id":"mt-0p","team":1,"at":"2026-11-23T12:00:07Z"}`)
	if got := string(ticketIDOf(data)); got != "tk-3qf0" {
		t.Errorf("ticketIDOf = %q", got)
	}
	if ticketIDOf([]byte(`{"seq":1}`)) != nil {
		t.Error("no ticket_id: want nil")
	}
}

func TestDist(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	d := newDist(ds)
	if d.N != 100 || d.P50 != 51 || d.P99 != 100 || d.Max != 100 || d.Mean != 50.5 {
		t.Errorf("%+v", d)
	}
	if newDist(nil).N != 0 {
		t.Error("empty")
	}
}
