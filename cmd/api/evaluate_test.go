package main

import (
	"bytes"
	"path/filepath"
	"reflect"
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
