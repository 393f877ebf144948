package matchmaker

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The algorithms know no HTTP, no SQL and no clock. This asks the go tool for everything the
// packages under internal/matchmaker import, directly or not, and fails on any network or
// database package, and on any package of this module that reads the time of day or waits
// (importing time for durations would be allowed; none does today).
func TestAlgorithmsKnowNoIONorClock(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list the dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps",
		"-f", `{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}|{{join .Imports ","}}`,
		"github.com/matchmakerhq/matchmaker/internal/matchmaker/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"net", "database/sql", "github.com/jackc/pgx", "os/exec", "github.com/matchmakerhq/matchmaker/internal/ratings",
		"github.com/matchmakerhq/matchmaker/internal/handlers", "github.com/matchmakerhq/matchmaker/db"}
	clock := []string{"time.Now(", "time.Since(", "time.Until(", "time.Sleep(", "time.After(",
		"time.AfterFunc(", "time.Tick(", "time.NewTimer(", "time.NewTicker("}
	seen := map[string]bool{}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		f := strings.Split(strings.TrimSpace(line), "|")
		path, dir, files, imports := f[0], f[1], strings.Split(f[2], ","), strings.Split(f[3], ",")
		seen[path] = true
		for _, bad := range forbidden {
			if path == bad || strings.HasPrefix(path, bad+"/") {
				t.Errorf("internal/matchmaker depends on %s", path)
			}
		}
		if !strings.HasPrefix(path, "github.com/matchmakerhq/matchmaker/") {
			continue
		}
		for _, imp := range imports {
			if imp != "time" {
				continue
			}
			for _, name := range files {
				src, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				for _, call := range clock {
					if bytes.Contains(src, []byte(call)) {
						t.Errorf("%s/%s calls %s...): time must be an argument", path, name, call)
					}
				}
			}
		}
	}
	// Every package directory here is among those checked (a new one too).
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() == "testdata" {
			return err
		}
		code, _ := filepath.Glob(filepath.Join(path, "*.go"))
		code = slices.DeleteFunc(code, func(name string) bool { return strings.HasSuffix(name, "_test.go") })
		if pkg := "github.com/matchmakerhq/matchmaker/internal/matchmaker/" + filepath.ToSlash(path); len(code) > 0 && path != "." && !seen[pkg] {
			t.Errorf("go list did not name %s: the check does not cover it", pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 5 {
		t.Fatalf("go list named %d packages; the check saw nothing:\n%s", len(seen), out)
	}
}
