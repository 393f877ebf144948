package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPrometheusScrapesTheRunningService starts the real program and Debian's Prometheus
// against it, then asks Prometheus (through its HTTP API) whether the target is up and the
// request histogram has samples: the scrape a dashboard depends on, end to end.
func TestPrometheusScrapesTheRunningService(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("MATCHMAKER_REQUIRE_TEST_DB") == "1" {
			t.Fatal("prometheus is not installed (Debian package prometheus); CI must install it")
		}
		t.Skip("prometheus is not installed (Debian package prometheus)")
	}
	base, stop := startRun(t, nil)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	target := strings.TrimPrefix(base, "http://")

	dir := t.TempDir()
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: matchmaker\n    static_configs:\n      - targets: [%q]\n", target)
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := freeLoopbackAddr(t)
	cmd := exec.Command(prom, "--config.file="+configPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()

	query := func(q string) (float64, bool) {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		var body struct {
			Status string
			Data   struct {
				Result []struct {
					Value [2]any
				}
			}
		}
		if json.NewDecoder(resp.Body).Decode(&body) != nil || body.Status != "success" || len(body.Data.Result) == 0 {
			return 0, false
		}
		s, _ := body.Data.Result[0].Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		// Traffic for the histogram, every round, until Prometheus has seen it.
		resp, err := http.Post(base+"/v1/matchmake", "application/json",
			strings.NewReader(`{"team_size":1,"players":[{"id":"a","rating":1},{"id":"b","rating":2}]}`))
		if err == nil {
			resp.Body.Close()
		}
		up, okUp := query(`up{job="matchmaker"}`)
		samples, okSamples := query(`sum(matchmaker_http_request_duration_seconds_count{route="/v1/matchmake"})`)
		if okUp && up == 1 && okSamples && samples > 0 {
			t.Logf("Prometheus sees the target up with %g matchmake requests", samples)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s Prometheus has up=%g (%v) and %g samples (%v)", up, okUp, samples, okSamples)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
