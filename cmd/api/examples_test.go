package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestExamples runs every program in examples/ against a fresh server, as their comments
// tell a reader to: `go run ./examples/NAME` from the repository's root with KEY and
// MATCHMAKER_URL. Each must end with exit status 0 and print what it is for. The allocator is
// a server, not a client: it runs beside the readycheck example, as its comment tells.
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
	// What each example needs besides a server (its env, the server's env) and what its
	// output must show; an example not listed runs against a bare server and prints a match.
	type setup struct {
		server map[string]string
		env    func(t *testing.T) []string
		check  func(t *testing.T, out string)
	}
	setups := map[string]setup{
		"allocator": {}, // run by readycheck
		"readycheck": {
			server: map[string]string{"MATCHMAKER_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8"},
			env: func(t *testing.T) []string {
				url := startAllocator(t, gobin, "readycheck-secret")
				return []string{"ALLOCATOR_URL=" + url, "ALLOCATOR_SECRET=readycheck-secret"}
			},
			check: checkReadyCheck,
		},
		// The match function listens on a free port of 127.0.0.1, which the service may call.
		"mmf": {
			server: map[string]string{"MATCHMAKER_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8"},
			check:  checkMatchFunction,
		},
	}
	for _, mainFile := range dirs {
		name := filepath.Base(filepath.Dir(mainFile))
		if name == "allocator" {
			continue
		}
		s := setups[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := startDocsServer(t, s.server)
			env := append(os.Environ(), "KEY="+docsKey, "MATCHMAKER_URL="+base)
			if s.env != nil {
				env = append(env, s.env(t)...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, gobin, "run", "./examples/"+name)
			cmd.Dir = filepath.Join("..", "..")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go run ./examples/%s failed (%v):\n%s", name, err, out)
			}
			t.Logf("%s", out)
			if s.check != nil {
				s.check(t, string(out))
			} else if !strings.Contains(string(out), "match ") {
				t.Fatalf("the example printed no match:\n%s", out)
			}
		})
	}
	for name := range setups {
		if _, err := os.Stat(filepath.Join("..", "..", "examples", name, "main.go")); err != nil {
			t.Errorf("the test sets up example %s, which is gone: %v", name, err)
		}
	}
}

// connectLine is a line of the readycheck example's output: a player and where he plays.
var connectLine = regexp.MustCompile(`(?m)^(\S+) connects to 10\.0\.0\.7:(\d+) \(match (\S+), team ([01])\)$`)

// checkReadyCheck asserts that each of the ten players was told a server of the allocator's,
// the same for all (one match of ten), five on each team.
func checkReadyCheck(t *testing.T, out string) {
	t.Helper()
	lines := connectLine.FindAllStringSubmatch(out, -1)
	players, ports, matches, teams := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]int{}
	for _, l := range lines {
		players[l[1]], ports[l[2]], matches[l[3]] = true, true, true
		teams[l[4]]++
	}
	if len(players) != 10 || len(lines) != 10 {
		t.Fatalf("want a connection for each of 10 players, got %d line(s) for %d player(s):\n%s", len(lines), len(players), out)
	}
	if len(ports) != 1 || len(matches) != 1 || teams["0"] != 5 || teams["1"] != 5 {
		t.Fatalf("want one match of two teams of five on one server, got matches %v, ports %v, teams %v", matches, ports, teams)
	}
}

// mmfMatch is a line of the mmf example's output: a match's two teams.
var mmfMatch = regexp.MustCompile(`(?m)^match (\S+): (\S+ \S+ \S+) against (\S+ \S+ \S+)$`)

// checkMatchFunction asserts that the mmf example's function proposed the matches (its log
// line), that its twelve players played in two 3v3 matches, and that no clan played on two
// teams of one match: the wolves (ana, ben, cleo), the ravens (dan, eva, fay). dan and eva
// are a party: always together.
func checkMatchFunction(t *testing.T, out string) {
	t.Helper()
	if !regexp.MustCompile(`(?m)tick \d+: \d+ ticket\(s\) in the pool, [12] match\(es\) proposed$`).MatchString(out) {
		t.Fatalf("the example's function proposed no match:\n%s", out)
	}
	lines := mmfMatch.FindAllStringSubmatch(out, -1)
	if len(lines) != 2 || !strings.Contains(out, "every clan played on one team") {
		t.Fatalf("want two 3v3 matches and every clan on one team:\n%s", out)
	}
	matchOf, teamOf := map[string]string{}, map[string]int{}
	for _, l := range lines {
		for side, team := range l[2:] {
			for p := range strings.FieldsSeq(team) {
				matchOf[p], teamOf[p] = l[1], side
			}
		}
	}
	if len(matchOf) != 12 {
		t.Fatalf("want the 12 players in the matches, got %d:\n%s", len(matchOf), out)
	}
	for _, clan := range [][]string{{"ana", "ben", "cleo"}, {"dan", "eva", "fay"}} {
		for _, a := range clan {
			for _, b := range clan {
				if matchOf[a] == matchOf[b] && teamOf[a] != teamOf[b] {
					t.Errorf("%s and %s, of one clan, on both teams of match %s", a, b, matchOf[a])
				}
			}
		}
	}
	if matchOf["dan"] != matchOf["eva"] || teamOf["dan"] != teamOf["eva"] {
		t.Errorf("the party dan+eva was split")
	}
}

// startAllocator builds examples/allocator and runs it on a free port of 127.0.0.1 with
// secret until the test ends; it returns the URL the program says it listens on. The test
// fails unless the allocator placed a match by then (it prints a line per match).
func startAllocator(t *testing.T, gobin, secret string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "allocator")
	build := exec.Command(gobin, "build", "-o", bin, "./examples/allocator")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/allocator: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ALLOCATOR_ADDR=127.0.0.1:0", "ALLOCATOR_SECRET="+secret)
	cmd.Stderr = &testLog{t: t, prefix: "allocator: "}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	allocated := make(chan struct{})
	read := make(chan struct{}) // closed when the program's stdout ends: it exited
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			t.Logf("allocator: %s", line)
			if u, ok := strings.CutPrefix(line, "allocator listening on "); ok {
				urls <- u
			}
			if strings.HasPrefix(line, "allocated ") {
				select {
				case <-allocated:
				default:
					close(allocated)
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-read:
		case <-time.After(10 * time.Second):
			t.Errorf("the allocator did not stop within 10 s of SIGINT")
			_ = cmd.Process.Kill()
			<-read
		}
		_ = cmd.Wait() // after the reads, as exec says
		select {
		case <-allocated:
		default:
			t.Errorf("the allocator placed no match")
		}
	})
	select {
	case u := <-urls:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("the allocator did not say where it listens within 30 s")
		return ""
	}
}

// testLog writes a program's stderr to the test's log, line by line.
type testLog struct {
	t      *testing.T
	prefix string
}

func (l *testLog) Write(p []byte) (int, error) {
	for line := range strings.Lines(string(p)) {
		l.t.Log(l.prefix + strings.TrimRight(line, "\n"))
	}
	return len(p), nil
}
