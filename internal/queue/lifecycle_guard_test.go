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
	clock := []string{"time.Now(", "time.Since(", "time.Until(", "time." + "Sleep(", "time.After(",
		"time.AfterFunc(", "time." + "Tick(", "time.NewTimer(", "time." + "NewTicker("}
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

// The queue's tests (and the contract suite's) wait on conditions: a tick's end, a signal
// from the code they watch, the fake clock, a synctest bubble. A sleep, or a loop that polls
// between sleeps, passes on a fast host without testing what it claims on a slow one.
func TestQueueTestsDoNotSleep(t *testing.T) {
	t.Parallel()
	// Spelled so that this file holds no call; a ticker's poll is a sleep by another name.
	waits := []string{"time." + "Sleep(", "time." + "NewTicker(", "time." + "Tick("}
	var files []string
	for _, pattern := range []string{"*_test.go", "*/*_test.go", "queuetest/*.go"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	if len(files) < 50 {
		t.Fatalf("found %d test files to check", len(files))
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, wait := range waits {
			if n := bytes.Count(src, []byte(wait)); n > 0 {
				t.Errorf("%s calls %s) %d times: wait for the condition instead", name, wait, n)
			}
		}
	}
}

// The queue's packages by role point inwards: the domain (this package), the Service
// (queuesvc), the leader's loop (queueleader), its stats (queuestats) and its event fan-out
// (queuefeed) import no adapter (no HTTP, no database driver); the leader's loop imports no
// Service (the Service starts it and hands it what it uses: the compiler holds it to that,
// queuesvc importing queueleader); the domain imports none of its
// subpackages but rulesjson, a leaf mapping of JSON to the match rules; every other subpackage
// (the Service and its parts, the memory store, the store guard, the outbound adapter, the
// contract suite) imports the domain, and cmd/api wires them.
func TestQueuePackagesPointInwards(t *testing.T) {
	t.Parallel()
	const module = "github.com/matchmakerhq/matchmaker/"
	forbidden := []string{"net/http", "database/sql", "github.com/jackc/pgx", module + "db"}
	for _, dir := range []string{".", "queuesvc", "queueleader", "queuestats", "queuefeed"} {
		for path, imports := range packageImports(t, dir) {
			for _, imp := range imports {
				if slices.ContainsFunc(forbidden, func(f string) bool { return imp == f || strings.HasPrefix(imp, f+"/") }) {
					t.Errorf("%s imports %s: the queue reaches no network or database itself", path, imp)
				}
			}
		}
	}
	for path, imports := range packageImports(t, ".") {
		for _, imp := range imports {
			if strings.HasPrefix(imp, module+"internal/queue/") && imp != module+"internal/queue/rulesjson" {
				t.Errorf("%s imports %s: the subpackages import the domain, not the reverse", path, imp)
			}
		}
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "testdata" || e.Name() == "rulesjson" {
			continue
		}
		var all []string
		for _, imports := range packageImports(t, e.Name()) {
			all = append(all, imports...)
		}
		if len(all) == 0 {
			continue
		}
		checked++
		if !slices.Contains(all, module+"internal/queue") {
			t.Errorf("%s does not import the queue's domain: does it belong under internal/queue?", e.Name())
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d subpackages, want the Service, memory store, store guard, outbound and contract suite", checked)
	}
}

// packageImports is, for each non-test Go file in dir, its imports.
func packageImports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]string)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			out[name] = append(out[name], path)
		}
	}
	return out
}
