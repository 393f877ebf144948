package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// startRun runs the whole program as main would, on a free port, and returns its base URL
// and a function that stops it and returns run's error.
func startRun(t *testing.T, env map[string]string, args ...string) (string, func() error) {
	t.Helper()
	p := startProgram(t, env, args...)
	return p.base, p.stop
}

// program is a running instance of the whole program.
type program struct {
	base   string // http://host:port
	legacy string // host:port of the line protocol, when MATCHMAKER_LEGACY_ADDR is set
	stop   func() error
}

func startProgram(t *testing.T, env map[string]string, args ...string) program {
	t.Helper()
	return startProgramLogging(t, env, nil, args...)
}

// startProgramLogging is startProgram that also hands each line the program logs to onLog
// (when not nil), as it is written.
func startProgramLogging(t *testing.T, env map[string]string, onLog func(line []byte), args ...string) program {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	getenv := func(k string) string {
		if k == "MATCHMAKER_ADDR" && env[k] == "" {
			return "127.0.0.1:0"
		}
		return env[k]
	}
	out, logs := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"api"}, args...), getenv, logs, io.Discard)
		logs.Close()
		done <- err
	}()
	addrs := make(chan [2]string, 2)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if onLog != nil {
				onLog(sc.Bytes())
			}
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Addr != "" {
				addrs <- [2]string{line.Msg, line.Addr}
			}
		}
	}()
	p := program{stop: sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			return fmt.Errorf("run did not return after cancel")
		}
	})}
	timeout := time.After(20 * time.Second)
	for p.base == "" || (env["MATCHMAKER_LEGACY_ADDR"] != "" && p.legacy == "") {
		select {
		case a := <-addrs:
			switch a[0] {
			case "listening":
				p.base = "http://" + a[1]
			case "line protocol listening":
				p.legacy = a[1]
			}
		case err := <-done:
			cancel()
			t.Fatalf("run exited before listening: %v", err)
		case <-timeout:
			cancel()
			t.Fatal("run did not start listening")
		}
	}
	return p
}

func TestRunServesAndShutsDownGracefully(t *testing.T) {
	t.Parallel()
	base, stop := startRun(t, nil)
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz = %d", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatalf("run returned %v after a clean shutdown", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("the server still answers after shutdown")
	}
}

func TestRunRejectsBadConfiguration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"bad log level", map[string]string{"MATCHMAKER_LOG_LEVEL": "loud"}, nil, "MATCHMAKER_LOG_LEVEL"},
		{"bad auth switch", map[string]string{"MATCHMAKER_AUTH": "maybe"}, nil, "MATCHMAKER_AUTH"},
		{"bad duration", map[string]string{"MATCHMAKER_SHUTDOWN_TIMEOUT": "soon"}, nil, "MATCHMAKER_SHUTDOWN_TIMEOUT"},
		{"tiny body limit", map[string]string{"MATCHMAKER_MAX_BODY_BYTES": "10"}, nil, "MATCHMAKER_MAX_BODY_BYTES"},
		{"team limit above the algorithms'", map[string]string{"MATCHMAKER_MAX_TEAM_PLAYERS": "100000"}, nil, "MATCHMAKER_MAX_TEAM_PLAYERS"},
		{"unknown flag", nil, []string{"-no-such-flag"}, "no-such-flag"},
		{"unknown command", nil, []string{"launch"}, "launch"},
		{"malformed API keys", map[string]string{"MATCHMAKER_API_KEYS": "ci:read:nothex"}, nil, "MATCHMAKER_API_KEYS"},
		{"malformed rate limits", map[string]string{"MATCHMAKER_RATE_LIMITS": "match=fast"}, nil, "MATCHMAKER_RATE_LIMITS"},
		{"unknown rating model", map[string]string{"MATCHMAKER_RATING_MODELS": "default=elo"}, nil, `MATCHMAKER_RATING_MODELS: entry 1 ("default=elo"): unknown model "elo"`},
		{"malformed rating scope", map[string]string{"MATCHMAKER_RATING_MODELS": "ctf=ns2,c tf=ns2"}, nil, `MATCHMAKER_RATING_MODELS: entry 2`},
		{"pool no larger than its committers", map[string]string{"MATCHMAKER_DB_MAX_CONNS": "4", "MATCHMAKER_STORE_COMMITTERS": "4"}, nil, "MATCHMAKER_DB_MAX_CONNS"},
		{"malformed memory budget", map[string]string{"MATCHMAKER_MEMORY_BUDGET": "lots"}, nil, "MATCHMAKER_MEMORY_BUDGET"},
		{"webhook attempts out of range", map[string]string{"MATCHMAKER_WEBHOOK_MAX_ATTEMPTS": "0"}, nil, "MATCHMAKER_WEBHOOK_MAX_ATTEMPTS"},
		{"session URL without a database URL", map[string]string{"DATABASE_SESSION_URL": "postgres://db/mm"}, nil, "DATABASE_SESSION_URL is set without DATABASE_URL"},
		{"webhook age out of range", map[string]string{"MATCHMAKER_WEBHOOK_MAX_AGE": "1s"}, nil, "MATCHMAKER_WEBHOOK_MAX_AGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			err := run(context.Background(), append([]string{"api"}, tt.args...), getenv, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run error = %v, want one mentioning %s", err, tt.want)
			}
		})
	}
}

func TestSizesReadWithUnits(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int64{"": 256 << 20, "0": 0, "1024": 1024, "64KiB": 64 << 10, "384MiB": 384 << 20, "2GiB": 2 << 30} {
		env := map[string]string{"MATCHMAKER_MEMORY_BUDGET": v}
		cfg, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
		if err != nil || cfg.Limits.Admission.Budget != want {
			t.Errorf("%q: %d, %v; want %d", v, cfg.Limits.Admission.Budget, err, want)
		}
	}
}

func TestRatingModelsConfigured(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"":                                   "default=ns2-kalman",
		"ctf=ns2, ctf+InstaGib=openskill-pl": "default=ns2-kalman,ctf=ns2,ctf+instagib=openskill-pl",
		"default=ns2":                        "default=ns2",
	} {
		env := map[string]string{"MATCHMAKER_RATING_MODELS": spec}
		cfg, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
		if err != nil || cfg.RatingModels.String() != want {
			t.Errorf("%q: %v, %v; want %s", spec, cfg.RatingModels, err, want)
		}
	}
}

func TestFlagsOverrideTheEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{"MATCHMAKER_ADDR": ":9000", "MATCHMAKER_LOG_LEVEL": "warn"}
	cfg, err := parseConfig([]string{"-addr", "127.0.0.1:9001"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:9001" || cfg.LogLevel.String() != "WARN" {
		t.Fatalf("cfg = %+v", cfg)
	}
}

func TestStartupLogMasksSecrets(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"postgres://app:hunter2@db:5432/mm", "postgres://app@db:5432/mm?sslmode=disable&password=hunter2"} {
		cfg := config{DatabaseURL: url, APIKeys: "ci:read:abc,ops:admin:def"}
		text := cfg.logValue().String()
		if strings.Contains(text, "hunter2") || strings.Contains(text, "abc") || !strings.Contains(text, "db:5432") {
			t.Fatalf("secrets leaked into the start-up log, or the host is gone: %s", text)
		}
	}
}

func TestHealthcheckSubcommandAsksTheRunningServer(t *testing.T) {
	t.Parallel()
	base, stop := startRun(t, nil)
	defer stop()
	addr := strings.TrimPrefix(base, "http://")
	getenv := func(k string) string {
		if k == "MATCHMAKER_ADDR" {
			return addr
		}
		return ""
	}
	if err := run(context.Background(), []string{"api", "healthcheck"}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatalf("healthcheck against a running server: %v", err)
	}
	stop()
	if err := run(context.Background(), []string{"api", "healthcheck"}, getenv, io.Discard, io.Discard); err == nil {
		t.Fatal("healthcheck must fail when nothing answers")
	}
}

func TestRunServesTheLineProtocolWhenConfigured(t *testing.T) {
	t.Parallel()
	p := startProgram(t, map[string]string{"MATCHMAKER_LEGACY_ADDR": "127.0.0.1:0"})
	conn, err := net.Dial("tcp", p.legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprint(conn, "GAME ctf\nPLAYER alice\nMEANBOT\n"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(conn)
	for _, want := range []string{"PLAYER alice", "MEANBOT 50.00 0"} {
		if !sc.Scan() || sc.Text() != want {
			t.Fatalf("got %q, want %q", sc.Text(), want)
		}
	}
	if err := p.stop(); err != nil {
		t.Fatalf("shutdown with the line protocol open: %v", err)
	}
}

// The same context gives the same player and bot weights over HTTP and over the line
// protocol, rated or not: both transports ask the one ratings service, whose rule decides
// what an unrated bot weighs (the context's mean bot weight, here below 50 after one loss).
func TestHTTPAndTheLineProtocolAnswerTheSameWeights(t *testing.T) {
	t.Parallel()
	p := startProgram(t, map[string]string{"MATCHMAKER_LEGACY_ADDR": "127.0.0.1:0", "MATCHMAKER_AUTH": "off"})
	defer p.stop()
	result := `{"match_id":"m1","context":{"game_type":"ctf"},"map":"face","duration_s":600,"winner":0,
		"teams":[{"side":"red","players":[{"id":"alice"},{"id":"bob"}]},
		         {"side":"blue","players":[{"id":"carol"},{"bot":"Jakob"}]}]}`
	resp, err := http.Post(p.base+"/v1/results", "application/json", strings.NewReader(result))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/results = %d", resp.StatusCode)
	}

	resp, err = http.Get(p.base + "/v1/ratings?game_type=ctf&ids=alice,carol,zed&bots=Jakob,Unrated")
	if err != nil {
		t.Fatal(err)
	}
	var batch struct {
		Ratings []struct {
			ID, Bot string
			Known   bool
			Weight  float64
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&batch)
	resp.Body.Close()
	if err != nil || len(batch.Ratings) != 5 {
		t.Fatalf("GET /v1/ratings: %v %+v", err, batch)
	}

	conn, err := net.Dial("tcp", p.legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GAME ctf\nPLAYER alice\nPLAYER carol\nPLAYER zed\nBOT Jakob\nBOT Unrated\n")
	sc := bufio.NewScanner(conn)
	for _, r := range batch.Ratings {
		if !sc.Scan() {
			t.Fatalf("the line protocol closed: %v", sc.Err())
		}
		want := fmt.Sprintf("PLAYER %s %.2f", r.ID, r.Weight)
		switch {
		case r.Bot != "":
			want = fmt.Sprintf("BOT %s %.2f", r.Bot, r.Weight)
		case !r.Known:
			want = "PLAYER " + r.ID // the protocol's "no weight known"; HTTP says 50
			if r.Weight != 50 {
				t.Errorf("unrated player %s weighs %g over HTTP, want 50", r.ID, r.Weight)
			}
		}
		if sc.Text() != want {
			t.Errorf("line protocol %q, HTTP says %q", sc.Text(), want)
		}
	}
	if jakob, unrated := batch.Ratings[3], batch.Ratings[4]; unrated.Known || jakob.Weight >= 50 || unrated.Weight != jakob.Weight {
		t.Errorf("an unrated bot weighs the mean of the rated ones (Jakob %g alone, after a loss): got %g", jakob.Weight, unrated.Weight)
	}
}

func TestAutoTuneShareConfigured(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]float64{"": DefaultAutoTuneShare, "0.5": 0.5, "1": 1} {
		env := map[string]string{"MATCHMAKER_AUTO_TUNE_CPU_SHARE": v}
		cfg, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
		if err != nil || cfg.AutoTuneShare != want {
			t.Errorf("%q: %g, %v; want %g", v, cfg.AutoTuneShare, err, want)
		}
	}
	for _, v := range []string{"0", "-0.1", "1.5", "NaN", "a quarter"} {
		env := map[string]string{"MATCHMAKER_AUTO_TUNE_CPU_SHARE": v}
		if _, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard); err == nil || !strings.Contains(err.Error(), "MATCHMAKER_AUTO_TUNE_CPU_SHARE") {
			t.Errorf("%q: %v, want an error naming MATCHMAKER_AUTO_TUNE_CPU_SHARE", v, err)
		}
	}
}
