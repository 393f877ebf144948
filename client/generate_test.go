package client_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed client must be what the pinned generator makes of the committed spec: a spec
// change without `go generate ./client` fails here instead of shipping a stale client.
func TestGeneratedClientIsUpToDate(t *testing.T) {
	t.Parallel()
	// `go tool -n` builds the generator pinned in go.mod (from the module cache, offline) and
	// prints its path; running it in a temporary directory writes the file there.
	path, err := exec.Command("go", "tool", "-n", "oapi-codegen").Output()
	if err != nil {
		t.Fatalf("go tool -n oapi-codegen: %v", err)
	}
	config, err := filepath.Abs("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := filepath.Abs(filepath.Join("..", "api", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gen := exec.Command(strings.TrimSpace(string(path)), "-config", config, spec)
	gen.Dir = dir
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, out)
	}
	fresh, err := os.ReadFile(filepath.Join(dir, "client.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatal("client/client.gen.go is stale for api/openapi.yaml: run go generate ./client")
	}
}
