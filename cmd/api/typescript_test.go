package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// TestTypeScriptClient runs the TypeScript client's own tests (clients/typescript, `npm test`:
// a queue, tickets, the match followed over SSE and long-polls, its result; a queue whose
// match function the test serves) against the whole
// program, on the in-memory store and on Postgres, after checking that its src/schema.d.ts is generated from the current spec. The
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
	run := func(t *testing.T, env []string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		cmd.WaitDelay = 10 * time.Second // node, npm's child, may hold the output open after a kill
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("npm %v in clients/typescript failed (%v):\n%s", args, err, out)
		}
		t.Logf("npm %v:\n%s", args, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		run(t, nil, "ci", "--no-audit", "--no-fund")
	}
	run(t, nil, "run", "check-generated")
	// One store after the other: both runs build into clients/typescript/dist.
	t.Run("memory", func(t *testing.T) {
		run(t, []string{"MATCHMAKER_URL=" + startDocsServer(t, allowLoopback), "MATCHMAKER_KEY=" + docsKey}, "test")
	})
	// On Postgres the events reach the stream through LISTEN/NOTIFY.
	t.Run("postgres", func(t *testing.T) {
		base := startDocsServer(t, map[string]string{"DATABASE_URL": dbtest.URL(t), "MATCHMAKER_DB_MAX_CONNS": "6",
			"MATCHMAKER_WEBHOOK_ALLOW_CIDRS": allowLoopback["MATCHMAKER_WEBHOOK_ALLOW_CIDRS"]})
		run(t, []string{"MATCHMAKER_URL=" + base, "MATCHMAKER_KEY=" + docsKey}, "test")
	})
}

// allowLoopback lets the service call 127.0.0.1, where the client's match function test
// serves one.
var allowLoopback = map[string]string{"MATCHMAKER_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8"}

// TestDocsTypeScriptExample keeps docs/clients.md's TypeScript program the one the client's
// tests run (clients/typescript/examples/duel.ts), as a reader imports it: from the package
// by name, where the example imports the sources beside it.
func TestDocsTypeScriptExample(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile(filepath.Join("..", "..", "clients", "typescript", "examples", "duel.ts"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(example), `from "../src/index.js"`, `from "@matchmaker/client"`, 1)
	blocks, err := docBlocks(filepath.Join("..", "..", "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	var programs []docBlock
	for _, b := range blocks {
		if b.lang == "ts" {
			programs = append(programs, b)
		}
	}
	if len(programs) != 1 {
		t.Fatalf("docs/clients.md has %d TypeScript blocks, want the one program", len(programs))
	}
	if got := programs[0].code; got != want {
		t.Errorf("docs/clients.md:%d is not clients/typescript/examples/duel.ts (with the package's import); copy the example into the page.\npage:\n%s\nexample:\n%s",
			programs[0].line, got, want)
	}
}
