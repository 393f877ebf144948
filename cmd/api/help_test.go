package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// envNames are the environment variables the program's code reads: every string literal of
// cmd/api's non-test files that is a whole variable name (MATCHMAKER_*, DATABASE_URL, GO*).
func envNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`"((?:MATCHMAKER|DATABASE|GO)[A-Z_]*)"`)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range name.FindAllSubmatch(src, -1) {
			names = append(names, string(m[1]))
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) < 20 {
		t.Fatalf("found only %d environment variables in the code (%v): did the config move?", len(names), names)
	}
	return names
}

func TestHelpListsCommandsAndEnvironment(t *testing.T) {
	t.Parallel()
	vars := envNames(t)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			// An environment that would fail validation: help must not depend on it.
			getenv := func(k string) string {
				if k == "MATCHMAKER_QUEUE_RETENTION" {
					return "1s"
				}
				return ""
			}
			if err := run(context.Background(), append([]string{"api"}, args...), getenv, &stdout, &stderr); err != nil {
				t.Fatalf("api %s returned %v, want success (exit 0)", strings.Join(args, " "), err)
			}
			out := stdout.String()
			for _, want := range append([]string{"serve", "migrate", "rebuild", "healthcheck", "evaluate", "simulate", "-database-url"}, vars...) {
				if !strings.Contains(out, want) {
					t.Errorf("api %s does not mention %s:\n%s", strings.Join(args, " "), want, out)
				}
			}
			if stderr.Len() > 0 {
				t.Errorf("api %s wrote to stderr: %s", strings.Join(args, " "), stderr.String())
			}
		})
	}
	// A command's -h prints the same usage and succeeds.
	for _, args := range [][]string{{"serve", "-h"}, {"migrate", "--help"}, {"rebuild", "-help"}} {
		var stdout bytes.Buffer
		err := run(context.Background(), append([]string{"api"}, args...), func(string) string { return "" }, &stdout, &bytes.Buffer{})
		if err != nil || !strings.Contains(stdout.String(), "MATCHMAKER_ADDR") {
			t.Errorf("api %s = %v, printing %q; want success and the usage", strings.Join(args, " "), err, stdout.String())
		}
	}
	// The subcommands with flags of their own print their own usage (to stderr, as flag does)
	// and succeed.
	for _, cmd := range []string{"evaluate", "simulate"} {
		var stderr bytes.Buffer
		if err := run(context.Background(), []string{"api", cmd, "-h"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr); err != nil {
			t.Errorf("api %s -h = %v, want success", cmd, err)
		}
		if !strings.Contains(stderr.String(), "-") {
			t.Errorf("api %s -h printed no flags: %q", cmd, stderr.String())
		}
	}
}

// The operator's page documents every variable the program reads.
func TestOperationsPageListsEveryEnvironmentVariable(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range envNames(t) {
		if !bytes.Contains(page, []byte("`"+name+"`")) {
			t.Errorf("docs/operations.md does not document %s", name)
		}
	}
}
