package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExamples runs every program in examples/ against a fresh server, as their comments
// tell a reader to: `go run ./examples/NAME` from the repository's root with KEY and
// MATCHMAKER_URL. Each must end with exit status 0.
func TestExamples(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the example programs; not in -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the examples with: %v", err)
	}
	dirs, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "main.go"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no example programs found (%v): did examples/ move?", err)
	}
	for _, mainFile := range dirs {
		name := filepath.Base(filepath.Dir(mainFile))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := startDocsServer(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, gobin, "run", "./examples/"+name)
			cmd.Dir = filepath.Join("..", "..")
			cmd.Env = append(os.Environ(), "KEY="+docsKey, "MATCHMAKER_URL="+base)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go run ./examples/%s failed (%v):\n%s", name, err, out)
			}
			if !strings.Contains(string(out), "match ") {
				t.Fatalf("the example printed no match:\n%s", out)
			}
			t.Logf("%s", out)
		})
	}
}
