package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestTypeScriptClient runs the TypeScript client's own tests (clients/typescript, `npm test`:
// a queue, tickets, the match followed over SSE and long-polls, its result) against the whole
// program, after checking that its src/schema.d.ts is generated from the current spec. The
// packages come from package-lock.json (`npm ci`, when node_modules is missing: CI installs
// them beforehand). Without npm the test is skipped, or fails under
// MATCHMAKER_REQUIRE_TEST_DB=1 (CI).
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the TypeScript client's tests; not in -short")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("MATCHMAKER_REQUIRE_TEST_DB") == "1" {
			t.Fatal("npm is not installed (Debian packages nodejs and npm); CI must install it")
		}
		t.Skip("npm is not installed (Debian packages nodejs and npm): the TypeScript client is not tested")
	}
	dir := filepath.Join("..", "..", "clients", "typescript")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(env []string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("npm %v in clients/typescript failed (%v):\n%s", args, err, out)
		}
		t.Logf("npm %v:\n%s", args, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		run(nil, "ci", "--no-audit", "--no-fund")
	}
	run(nil, "run", "check-generated")
	base := startDocsServer(t)
	run([]string{"MATCHMAKER_URL=" + base, "MATCHMAKER_KEY=" + docsKey}, "test")
}
