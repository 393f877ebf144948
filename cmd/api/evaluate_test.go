package main

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestEvaluateLeagueAndItsExport exports a simulated league, replays the export with -data,
// and gets the same table as replaying the league directly (less the truth's row).
func TestEvaluateLeagueAndItsExport(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "league.jsonl")
	var out, errOut bytes.Buffer
	noEnv := func(string) string { return "" }
	if err := run(t.Context(), []string{"api", "evaluate", "-league", "newcomers", "-seed", "2", "-export", file}, noEnv, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	if err := run(t.Context(), []string{"api", "evaluate", "-league", "newcomers", "-seed", "2"}, noEnv, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	direct := out.String()
	out.Reset()
	if err := run(t.Context(), []string{"api", "evaluate", "-data", file, "-burnin", "0.2"}, noEnv, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	fields := func(s string) [][]string {
		var rows [][]string
		for line := range strings.Lines(s) {
			rows = append(rows, strings.Fields(line))
		}
		return rows
	}
	d, e := fields(direct), fields(out.String())
	if !strings.Contains(direct, "(truth)") || len(d) != len(e)+1 || !reflect.DeepEqual(d[:len(e)], e) {
		t.Errorf("league:\n%s\nits export:\n%s", direct, out.String())
	}
	for _, args := range [][]string{{"-data", file, "-league", "default"}, {"-models", "elo"}, {"-data", file, "-format", "xml"}, {}} {
		if err := run(t.Context(), append([]string{"api", "evaluate"}, args...), noEnv, &out, &errOut); err == nil {
			t.Errorf("%q: want an error", args)
		}
	}
}

// -tune adds the tuned row, which scores no worse than the untuned default it starts from
// (its fit is kept only if it predicts the held-out tail better), and prints the fit.
func TestEvaluateTune(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	args := []string{"api", "evaluate", "-league", "default", "-seed", "1", "-matches", "2500", "-models", "ns2-kalman", "-tune"}
	if err := run(t.Context(), args, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	logLoss := map[string]float64{}
	for line := range strings.Lines(out.String()) {
		f := strings.Fields(line)
		if len(f) >= 6 && (f[0] == "ns2-kalman") {
			name := f[0]
			if f[1] == "(tuned)" {
				name, f = "tuned", f[1:]
			}
			v, err := strconv.ParseFloat(f[3], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			logLoss[name] = v
		}
	}
	if len(logLoss) != 2 || logLoss["tuned"] > logLoss["ns2-kalman"] || !strings.Contains(out.String(), "ns2 (ns2-kalman, 2500 results") {
		t.Fatalf("log losses %v in:\n%s", logLoss, out.String())
	}
}
