package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// The documentation's examples are run as a reader would run them: every ```sh block of
// README.md and docs/*.md that calls curl, in the order of its page, in one bash per page,
// against a fresh in-memory server of the whole program with a key of every scope in KEY
// (as the README's "Run it" makes one). "localhost:8080" in a block becomes the test server's
// address. curl fails on an HTTP error status here (--fail-with-body), so an example that
// answers 4xx or 5xx fails the test with the problem document in its log. A block that cannot
// run here (it needs docker compose, Postgres, ...) says so in the page: an HTML comment
// `<!-- not run: why -->` on the line before its fence. The test logs each one it skips.

// docsKey is the API key the examples run with.
const docsKey = "docs-test-key"

// docBlock is a fenced code block of a page.
type docBlock struct {
	file   string
	line   int    // the line of the opening fence, from 1
	lang   string // sh, go, ...
	code   string
	notRun string // the reason given in a <!-- not run: ... --> comment before it
}

// docBlocks reads the fenced code blocks of a markdown file.
func docBlocks(path string) ([]docBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks   []docBlock
		cur      *docBlock
		body     strings.Builder
		previous string // the last non-blank line outside a block
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &docBlock{file: path, line: n, lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
			if reason, ok := strings.CutPrefix(previous, "<!-- not run:"); ok {
				cur.notRun = strings.TrimSpace(strings.TrimSuffix(reason, "-->"))
			}
			body.Reset()
		case cur != nil && strings.HasPrefix(line, "```"):
			cur.code = body.String()
			blocks = append(blocks, *cur)
			cur, previous = nil, ""
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		case strings.TrimSpace(line) != "":
			previous = strings.TrimSpace(line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the code block is never closed", path, cur.line)
	}
	return blocks, nil
}

// docPages are the pages whose examples are run: the README and every page of docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join("..", "..", "README.md")}, pages...)
}

func TestDocsCurlExamples(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the documentation's examples need bash, curl and jq: %v", err)
		}
	}
	ran := 0
	for _, page := range docPages(t) {
		blocks, err := docBlocks(page)
		if err != nil {
			t.Fatal(err)
		}
		var run []docBlock
		for _, b := range blocks {
			if (b.lang != "sh" && b.lang != "bash") || !strings.Contains(b.code, "curl") {
				continue
			}
			if b.notRun != "" {
				t.Logf("%s:%d: not run: %s", b.file, b.line, b.notRun)
				continue
			}
			run = append(run, b)
		}
		if len(run) == 0 {
			continue
		}
		ran += len(run)
		t.Run(filepath.Base(page), func(t *testing.T) {
			t.Parallel()
			runDocBlocks(t, page, run, startDocsServer(t, nil))
		})
	}
	if ran == 0 {
		t.Fatal("found no curl example to run: did the pages move?")
	}
}

// curlBlocks are the page's shell blocks that call curl and are not marked "not run".
func curlBlocks(t *testing.T, page string) []docBlock {
	blocks, err := docBlocks(page)
	if err != nil {
		t.Fatal(err)
	}
	var run []docBlock
	for _, b := range blocks {
		if (b.lang != "sh" && b.lang != "bash") || !strings.Contains(b.code, "curl") || b.notRun != "" {
			continue
		}
		run = append(run, b)
	}
	return run
}

// runDocBlocks runs a page's blocks in order, in one bash, against the server at base.
func runDocBlocks(t *testing.T, page string, run []docBlock, base string) {
	t.Helper()
	var script strings.Builder
	// curl fails on an HTTP error and shows why, and which call it was; -q keeps a
	// ~/.curlrc out of it.
	script.WriteString(`set -euo pipefail
curl() {
  command curl -q --fail-with-body --show-error "$@" || { local rc=$?; printf '### curl exited %d: curl %s\n' $rc "$*"; return $rc; }
}
`)
	for _, b := range run {
		fmt.Fprintf(&script, "printf '\\n### %s:%d\\n'\n", filepath.Base(b.file), b.line)
		script.WriteString(strings.ReplaceAll(b.code, "localhost:8080", strings.TrimPrefix(base, "http://")))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "KEY="+docsKey, "HOME="+cmd.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		// The last "###" line of the output names the block that failed.
		t.Fatalf("an example of %s failed (%v); its output, block by block:\n%s", page, err, out)
	}
	t.Logf("%d block(s) ran", len(run))
}

// TestDocsRulesOnPostgres runs the match rules page (its four queues: mode and map, roles,
// a free-for-all, one against four) against a server on Postgres, as a studio runs it.
func TestDocsRulesOnPostgres(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the documentation's examples need bash, curl and jq: %v", err)
		}
	}
	page := filepath.Join("..", "..", "docs", "rules.md")
	runDocBlocks(t, page, curlBlocks(t, page), startDocsServer(t, map[string]string{"DATABASE_URL": dbtest.URL(t)}))
}

// TestDocsGoExamples builds and runs every complete Go program in the pages (a ```go block
// that starts with its package clause) against a fresh server, as the README tells a reader
// to: `go run` from the repository's root.
func TestDocsGoExamples(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the documentation's Go programs; not in -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the examples with: %v", err)
	}
	for _, page := range docPages(t) {
		blocks, err := docBlocks(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			program := strings.HasPrefix(b.code, "package ") || strings.Contains(b.code, "\npackage ")
			if b.lang != "go" || !program {
				continue
			}
			if b.notRun != "" {
				t.Logf("%s:%d: not run: %s", b.file, b.line, b.notRun)
				continue
			}
			t.Run(fmt.Sprintf("%s:%d", filepath.Base(b.file), b.line), func(t *testing.T) {
				t.Parallel()
				base := startDocsServer(t, nil)
				file := filepath.Join(t.TempDir(), "main.go")
				if err := os.WriteFile(file, []byte(strings.ReplaceAll(b.code, "http://localhost:8080", base)), 0o644); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, gobin, "run", file)
				cmd.Dir = filepath.Join("..", "..") // the module's root, as the README says
				cmd.Env = append(os.Environ(), "KEY="+docsKey)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("go run of the program at %s:%d failed (%v):\n%s", b.file, b.line, err, out)
				}
				t.Logf("%s", out)
			})
		}
	}
}

// startDocsServer starts the whole program with the in-memory store and docsKey, with every
// scope, and returns its base URL.
func startDocsServer(t *testing.T, env map[string]string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(docsKey))
	env = maps.Clone(env)
	if env == nil {
		env = map[string]string{}
	}
	env["MATCHMAKER_API_KEYS"] = "docs:read+match+results+admin:" + hex.EncodeToString(sum[:])
	p := startProgram(t, env)
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("the server's shutdown: %v", err)
		}
	})
	return p.base
}
