package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
)

func TestStoreSettings(t *testing.T) {
	cfg, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := db.Options{Timeout: db.DefaultTimeout, RebuildTimeout: db.DefaultRebuildTimeout, MaxConns: db.DefaultMaxConns, DetectPooler: true}
	wantRatings := ratingsdb.Options{Committers: ratingsdb.DefaultCommitters}
	if got, gotRatings := cfg.storeOptions(), cfg.ratingsOptions(); got != want || gotRatings != wantRatings ||
		cfg.StoreStartupTimeout != 30*time.Second {
		t.Fatalf("defaults: %+v %+v, start-up %v", got, gotRatings, cfg.StoreStartupTimeout)
	}
	env := map[string]string{"MATCHMAKER_STORE_TIMEOUT": "750ms", "MATCHMAKER_STORE_REBUILD_TIMEOUT": "1h",
		"MATCHMAKER_STORE_STARTUP_TIMEOUT": "0", "MATCHMAKER_STORE_COMMITTERS": "2",
		"MATCHMAKER_DB_MAX_CONNS": "6"}
	cfg, err = parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want = db.Options{Timeout: 750 * time.Millisecond, RebuildTimeout: time.Hour, MaxConns: 6, DetectPooler: true}
	wantRatings = ratingsdb.Options{Committers: 2}
	if got, gotRatings := cfg.storeOptions(), cfg.ratingsOptions(); got != want || gotRatings != wantRatings ||
		cfg.StoreStartupTimeout != 0 {
		t.Fatalf("set: %+v %+v, start-up %v", got, gotRatings, cfg.StoreStartupTimeout)
	}
}

func TestRunRejectsBadStoreSettings(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"MATCHMAKER_STORE_TIMEOUT", "0s"},
		{"MATCHMAKER_STORE_TIMEOUT", "soon"},
		{"MATCHMAKER_STORE_REBUILD_TIMEOUT", "-1s"},
		{"MATCHMAKER_STORE_STARTUP_TIMEOUT", "-5s"},
		{"MATCHMAKER_STORE_COMMITTERS", "-1"},
		{"MATCHMAKER_STORE_COMMITTERS", "1000"},
		{"MATCHMAKER_DB_MAX_CONNS", "0"},
		{"MATCHMAKER_DB_MAX_CONNS", "5000"},
	} {
		getenv := func(k string) string {
			if k == tc.name {
				return tc.value
			}
			return ""
		}
		err := run(context.Background(), []string{"api"}, getenv, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s=%s: run error = %v", tc.name, tc.value, err)
		}
	}
}

// TestRunExitsWhenTheDatabaseNeverComes: start-up against a database that refuses
// connections gives up after MATCHMAKER_STORE_STARTUP_TIMEOUT with an error, having logged its
// attempts, and never listens.
func TestRunExitsWhenTheDatabaseNeverComes(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"MATCHMAKER_ADDR":                  "127.0.0.1:0",
		"DATABASE_URL":                     "postgres://postgres@127.0.0.1:1/none?sslmode=disable", // nothing listens on port 1
		"MATCHMAKER_STORE_STARTUP_TIMEOUT": "1500ms",
	}
	var logs strings.Builder
	start := time.Now()
	err := run(context.Background(), []string{"api"}, func(k string) string { return env[k] }, &logs, io.Discard)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "not ready after") {
		t.Fatalf("run = %v, want it to give up on the database", err)
	}
	t.Logf("%v after %v", err, took)
	if took > 3*time.Second {
		t.Errorf("run gave up after %v with a start-up timeout of 1.5s", took)
	}
	if !strings.Contains(logs.String(), "database not ready, retrying") || strings.Contains(logs.String(), `"msg":"listening"`) {
		t.Errorf("logs:\n%s", logs.String())
	}
}
