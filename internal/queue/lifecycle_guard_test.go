package queue_test

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The lifecycle (lifecycle*.go) does no I/O and reads no clock: the stores hand it what they
// read and the time, and write what it returns. This holds its files to imports that cannot
// reach a network, a database or a file, and to no call of the clock.
func TestLifecycleKnowsNoIONorClock(t *testing.T) {
	t.Parallel()
	allowed := []string{"encoding/json", "fmt", "maps", "slices", "time", "github.com/matchmakerhq/matchmaker/internal/apperr"}
	clock := []string{"time.Now(", "time.Since(", "time.Until(", "time.Sleep(", "time.After(",
		"time.AfterFunc(", "time.Tick(", "time.NewTimer(", "time.NewTicker("}
	files, err := filepath.Glob("lifecycle*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(allowed, path) {
				t.Errorf("%s imports %s: the lifecycle is decisions in values, its effects are the stores'", name, path)
			}
		}
		for _, call := range clock {
			if bytes.Contains(src, []byte(call)) {
				t.Errorf("%s calls %s...): time must be an argument", name, call)
			}
		}
	}
	if seen < 2 {
		t.Fatalf("found %d lifecycle files to check in %v", seen, files)
	}
}
