package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"matchmaker/internal/sim"
)

// simulateCmd runs `api simulate args...` through run and returns its stdout and stderr.
func simulateCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"api", "simulate"}, args...), func(string) string { return "" }, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestSimulateWritesTheSameReportForTheSameSeed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"-preset", "live", "-matches", "300", "-seed", "5", "-workers", "2"}
	out1, errs, err := simulateCmd(t, append(args, "-out", dir)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	out2, _, err := simulateCmd(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if out1 != out2 {
		t.Fatalf("same seed, different reports:\n%s\n---\n%s", out1, out2)
	}
	for _, want := range []string{"scenario preset live, seed 5", "no matchmaking", "thesis default", "thesis optimised",
		"learned rating", "one-sided", "the widening reached later"} {
		if !strings.Contains(out1, want) {
			t.Errorf("the report does not say %q:\n%s", want, out1)
		}
	}
	if !strings.Contains(errs, "simulated 19 runs of 300 matches") {
		t.Errorf("stderr %q does not give the runs and the time", errs)
	}
	if strings.Contains(out1, "\r") || strings.Contains(errs, "\r") {
		t.Error("a progress bar was drawn without a terminal")
	}
	for _, name := range []string{"report.csv", "timeline.csv", "sweep.csv", "simulation.svg", "simulation.png"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "report.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 5 {
		t.Errorf("report.csv has %d lines, want a header and 4 configurations", lines)
	}
}

func TestSimulateOptimisesAndPrintsAQueueDefinition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errs, err := simulateCmd(t, "-preset", "live", "-matches", "200", "-optimize", "-wait-budget", "8s",
		"-max-evals", "10", "-optimize-from", "thesis optimised", "-out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	for _, want := range []string{`optimised from "thesis optimised"`, `"coefficients": {"accuracy": `, `"expansions": {"interval": [`,
		`{"after_s": 0, "value": `, `"strategy": "greedy_pairs"`, "found by search"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "optimise.csv")); err != nil {
		t.Error(err)
	}
}

func TestSimulatePrintConfigReadsBack(t *testing.T) {
	t.Parallel()
	out, _, err := simulateCmd(t, "-preset", "thesis", "-seed", "9", "-matches", "123", "-print-config")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := sim.ReadScenario(strings.NewReader(out))
	if err != nil || sc.Seed != 9 || sc.Matches != 123 {
		t.Fatalf("scenario %+v, error %v", sc, err)
	}
	report, errs, err := simulateCmd(t, "-config", path, "-matches", "50")
	if err != nil || !strings.Contains(report, "scenario scenario.json, seed 9: 10000 players, 50 matches") {
		t.Fatalf("error %v, report:\n%s\n%s", err, report, errs)
	}
}

func TestSimulateRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-preset", "nope"},
		{"-matches", "0"},
		{"-config", "/nonexistent/scenario.json"},
		{"-bogus"},
		{"extra"},
		{"-optimize", "-optimize-from", "no such configuration"},
		{"-optimize", "-optimize-from", "no matchmaking"},
	} {
		if _, _, err := simulateCmd(t, args...); err == nil {
			t.Errorf("simulate %q: no error", args)
		}
	}
}
