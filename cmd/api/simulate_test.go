package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/sim"
)

// queuesOfAProgram starts the whole program (auth off) for the rest of the test and returns
// a function that defines a queue from a definition simulate printed and returns the queue
// as created (201), failing the test otherwise.
func queuesOfAProgram(t *testing.T) func(name string, def []byte) *client.Queue {
	t.Helper()
	p := startProgram(t, map[string]string{"MATCHMAKER_AUTH": "off"})
	t.Cleanup(func() { _ = p.stop() })
	c, err := client.New(p.base, "")
	if err != nil {
		t.Fatal(err)
	}
	return func(name string, def []byte) *client.Queue {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		resp, err := c.PutQueueWithBodyWithResponse(ctx, name, "application/json", bytes.NewReader(def))
		if err != nil || resp.JSON201 == nil {
			t.Fatalf("PUT the printed definition: %v %d %s\n%s", err, resp.StatusCode(), resp.Body, def)
		}
		return resp.JSON201
	}
}

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
	for _, want := range []string{"scenario preset live, seed 5", "learned rating: the " + ratings.DefaultModel().Name() + " model", "no matchmaking", "thesis default", "thesis optimised",
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

// TestSimulateOptimisesAndPrintsAQueueDefinition runs the optimiser from the live preset's
// default (the tick matcher) and PUTs the queue definition it prints to the running program,
// which takes it as it is: the queue it answers runs the steps the simulator ran.
func TestSimulateOptimisesAndPrintsAQueueDefinition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errs, err := simulateCmd(t, "-preset", "live", "-matches", "200", "-optimize", "-wait-budget", "8s",
		"-max-evals", "10", "-out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	for _, want := range []string{`optimised from "thesis default"`, "PUT /v1/queues/{name}", `"expansions": {"interval": [`,
		`{"after_s": 0, "value": `, `"strategy": "rating_window"`, "found by search", `with these coefficients, {"accuracy": `,
		"rating = 1000 x ((1 - accuracy) x "} {
		if !strings.Contains(out, want) {
			t.Errorf("the report does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "optimise.csv")); err != nil {
		t.Error(err)
	}

	// The definition: from the line "{" to the line "}" after the heading.
	_, def, _ := strings.Cut(out, "PUT /v1/queues/{name}")
	start, end := strings.Index(def, "\n{\n"), strings.Index(def, "\n}\n")
	if start < 0 || end < start {
		t.Fatalf("no queue definition in the report:\n%s", out)
	}
	def = def[start+1 : end+2]
	var printed struct {
		Expansions struct{ Interval []client.Step }
	}
	if err := json.Unmarshal([]byte(def), &printed); err != nil {
		t.Fatalf("%v\n%s", err, def)
	}
	q := queuesOfAProgram(t)("searched", []byte(def))
	if got := *q.Expansions.Interval; !reflect.DeepEqual(got, printed.Expansions.Interval) || q.TeamSize != 5 ||
		q.Strategy != "rating_window" || q.TicketTtlS != 300 || q.MaxPartySize != 5 || q.TickMs != 1000 {
		t.Errorf("the queue %+v (interval %v) is not the definition printed:\n%s", q, got, def)
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
		{"-model", "elo"},
	} {
		if _, _, err := simulateCmd(t, args...); err == nil {
			t.Errorf("simulate %q: no error", args)
		}
	}
}

// TestSimulateModelFlag: -model picks the learned rating's model, names it in the report and
// refuses a name the service does not know, listing the ones it does.
func TestSimulateModelFlag(t *testing.T) {
	t.Parallel()
	args := []string{"-matches", "200", "-workers", "2"}
	def, errs, err := simulateCmd(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	ns2, errs, err := simulateCmd(t, append(args, "-model", "ns2")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	if !strings.Contains(ns2, "learned rating: the ns2 model") {
		t.Errorf("the report does not name the ns2 model:\n%s", ns2)
	}
	if def == ns2 {
		t.Error("-model ns2 gave the default model's report")
	}
	// The rows without the learned rating do not depend on the model.
	for _, row := range []string{"no matchmaking", "pairing: thesis default", "tick: thesis optimised"} {
		if a, b := lineWith(def, row), lineWith(ns2, row); a == "" || a != b {
			t.Errorf("row %q changed with the model:\n%s\n%s", row, a, b)
		}
	}
	_, _, err = simulateCmd(t, "-model", "elo")
	if err == nil || !strings.Contains(err.Error(), `-model "elo"`) || !strings.Contains(err.Error(), "ns2-kalman") {
		t.Errorf("-model elo: error %v, want one naming it and the models there are", err)
	}
}

// lineWith is the first line of s that contains sub, or "".
func lineWith(s, sub string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}

// TestSimulateRulesPreset: the rules preset prints the same report for the same seed, with
// the rule that held waiting tickets most and the role queues' re-picked parties, and a
// scenario whose rule reads an attribute it does not declare is refused, naming the rule's
// field and the attribute, as is a composition of a role the scenario does not list.
func TestSimulateRulesPreset(t *testing.T) {
	t.Parallel()
	checkPreset(t, "rules", []string{"scenario preset rules, seed 1", "held most by", "no rules", "mode + maps", "interval 91%",
		"roles re-picked", "mode + maps + roles 1/2/2", "roles 1/2/2: teams "},
		`"attribute": "maps"`, `"attribute": "map"`, "rules[1].attribute", `"map"`)
	checkRefused(t, "rules", `"tank": {`, `"tanks": {`, `configuration "roles 1/2/2"`, "composition.tanks", "one of the queue's roles")
}

// TestSimulatePartiesPreset: the parties preset prints the same report for the same seed,
// the solo queue beside the party queues, with the team-average difference's percentiles
// and the share of matches whose teams' largest parties differ; a configuration whose party
// sizes hold a party larger than a team is refused, naming the field.
func TestSimulatePartiesPreset(t *testing.T) {
	t.Parallel()
	checkPreset(t, "parties", []string{"scenario preset parties, seed 1", "solos", "parties, team_balance a fiftieth of the interval",
		"p90", "p99", "mixed parties", "parties: interval"},
		`"party_sizes": [
        1
      ]`, `"party_sizes": [1, 1, 1, 1, 1, 1]`, `configuration "solos"`, "party_sizes lists 6 sizes")
}

// TestSimulateReadyPreset: the ready preset prints the same report for the same seed, with
// the declined proposals and the second-proposal share, and a decline rate of 1 (nobody
// would ever play) is refused, naming the field.
func TestSimulateReadyPreset(t *testing.T) {
	t.Parallel()
	checkPreset(t, "ready", []string{"scenario preset ready, seed 1", "declined", "2nd proposal", "no ready check", "10% decline"},
		`"decline_rate": 0.1`, `"decline_rate": 1`, "acceptance.decline_rate")
}

// checkPreset runs a preset twice with one seed (the same report, saying each of says),
// then its printed scenario with good replaced by bad, which must be refused with an error
// saying each of refusal.
func checkPreset(t *testing.T, preset string, says []string, good, bad string, refusal ...string) {
	t.Helper()
	args := []string{"-preset", preset, "-matches", "150", "-workers", "2"}
	out1, errs, err := simulateCmd(t, args...)
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
	for _, want := range says {
		if !strings.Contains(out1, want) {
			t.Errorf("the report does not say %q:\n%s", want, out1)
		}
	}
	checkRefused(t, preset, good, bad, refusal...)
}

// checkRefused runs a preset's printed scenario with good replaced by bad, which must be
// refused with an error saying each of refusal.
func checkRefused(t *testing.T, preset, good, bad string, refusal ...string) {
	t.Helper()
	js, _, err := simulateCmd(t, "-preset", preset, "-print-config")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(js, good, bad, 1)
	if changed == js {
		t.Fatalf("the %s preset's JSON has no %s:\n%s", preset, good, js)
	}
	path := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = simulateCmd(t, "-config", path)
	for _, want := range refusal {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s instead of %s: error %v, want one saying %s", bad, good, err, want)
		}
	}
}

// TestSimulateRulesQueueDefinition: a configuration with rules prints as a queue definition
// with the scenario's attributes and its rules, and a role queue's with its roles and
// composition too, which the running program takes as printed.
func TestSimulateRulesQueueDefinition(t *testing.T) {
	t.Parallel()
	sc, err := sim.Preset("rules")
	if err != nil {
		t.Fatal(err)
	}
	cf := sc.Configurations[3] // mode + maps, maps optional after 60 s
	if len(cf.Rules) != 2 || cf.Rules[1].OptionalAfterS == nil {
		t.Fatalf("the preset's fourth configuration is %+v", cf)
	}
	def := sim.QueueSnippet(&sc, cf)
	put := queuesOfAProgram(t)
	q := put("ruled", def)
	if q.Rules == nil || len(*q.Rules) != 2 || q.Attributes == nil || len(*q.Attributes) != 2 {
		t.Fatalf("the queue's rules %v and attributes %v are not the definition printed:\n%s", q.Rules, q.Attributes, def)
	}
	maps, mode := (*q.Rules)[1], (*q.Rules)[0]
	if mode.Name != "mode" || string(mode.Type) != "equal" || maps.Name != "maps" || string(maps.Type) != "intersect" ||
		maps.OptionalAfterS == nil || *maps.OptionalAfterS != 60 {
		t.Errorf("rules %+v, %+v; printed:\n%s", mode, maps, def)
	}
	if d := (*q.Attributes)["maps"]; string(d.Type) != "string_list" || d.MaxItems == nil || *d.MaxItems != 3 {
		t.Errorf("maps declared as %+v; printed:\n%s", d, def)
	}

	// The role queue with mode and maps: its roles and composition as well.
	cf = sc.Configurations[5]
	if cf.Name != "mode + maps + roles 1/2/2" {
		t.Fatalf("the preset's sixth configuration is %+v", cf)
	}
	def = sim.QueueSnippet(&sc, cf)
	q = put("roles", def)
	if q.Roles == nil || !slices.Equal(*q.Roles, sc.Roles.Names) || q.Composition == nil || len(*q.Composition) != 3 ||
		q.Rules == nil || len(*q.Rules) != 2 || q.Teams != 2 || q.TeamSize != 5 {
		t.Fatalf("the queue %+v is not the definition printed:\n%s", q, def)
	}
	for role, want := range cf.Composition {
		if got := (*q.Composition)[role]; int(got.Min) != want.Min || int(got.Max) != want.Max {
			t.Errorf("composition.%s %+v, want %+v; printed:\n%s", role, got, want, def)
		}
	}
}
