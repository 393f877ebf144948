// Package pgfault gives a test a Postgres server of its own, started from the local server's
// binaries (initdb and pg_ctl) in a temporary directory on a free port, that the test can
// stop, start again, freeze and thaw: the faults the service must survive (a database that
// is shut down, one that stops answering) played on a server no one else uses. Only tests
// import it.
//
// The binaries are looked for in MATCHMAKER_PG_BIN, then in the newest
// /usr/lib/postgresql/*/bin (Debian's layout), then on PATH. Without them Start skips the test,
// or fails it when MATCHMAKER_REQUIRE_TEST_DB=1 (as CI sets). initdb and pg_ctl refuse to run
// as root: a test running as root runs them, and so the server, as the "postgres" user.
package pgfault

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// EnvBin names the directory holding initdb and pg_ctl, when they are not where Debian
	// puts them.
	EnvBin = "MATCHMAKER_PG_BIN"
	// EnvRequire, set to 1, turns "no Postgres binaries, skipped" into a failure.
	EnvRequire = "MATCHMAKER_REQUIRE_TEST_DB"
)

// Server is a private Postgres server. Its methods end the test on failure; they are not safe
// for concurrent use.
type Server struct {
	tb     testing.TB
	bin    string
	dir    string // holds data/, the socket and server.log
	port   int
	cred   *syscall.Credential // the postgres user's, when the test runs as root
	frozen []int               // the pids Freeze stopped
	killed bool                // Kill ended it: there is nothing left to stop
}

// Start initialises and starts a server for the test; it is stopped and its directory
// removed when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s := newServer(tb)
	s.run("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
	s.Start()
	return s
}

// newServer finds the binaries and makes the server's directory (owned by the postgres user
// when the test runs as root), removed when the test ends; the server has no data yet.
func newServer(tb testing.TB) *Server {
	tb.Helper()
	bin, err := binaries()
	if err != nil {
		skipOrFail(tb, err)
	}
	s := &Server{tb: tb, bin: bin}
	if os.Geteuid() == 0 {
		s.cred, err = postgresUser()
		if err != nil {
			skipOrFail(tb, err)
		}
	}
	s.dir, err = os.MkdirTemp("", "pgfault-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.remove)
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// URL is the connection URL of the server's postgres database.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Start starts the server (again, after Stop) and waits until it accepts connections. The
// first start picks a free port; later ones reuse it.
func (s *Server) Start() {
	s.tb.Helper()
	for attempt := 1; ; attempt++ {
		if s.port == 0 || attempt > 1 {
			s.port = freePort(s.tb)
		}
		err := s.tryRun("pg_ctl", "-D", s.data(), "-l", s.log(), "-w", "-t", "60", "-o", strings.Join([]string{
			"-p", strconv.Itoa(s.port), "-c", "listen_addresses=127.0.0.1", "-k", s.dir,
			// A test server: durability against a crash of the machine is not what it tests.
			"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=100",
		}, " "), "start")
		if err == nil {
			s.killed = false
			return
		}
		if attempt == 3 || !strings.Contains(s.logTail(), "could not bind") {
			s.tb.Fatalf("pgfault: pg_ctl start: %v\n%s", err, s.logTail())
		}
	}
}

// Stop shuts the server down cleanly (pg_ctl stop -m fast: sessions are ended, then it exits).
func (s *Server) Stop() {
	s.tb.Helper()
	s.Thaw()
	s.run("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "-t", "60", "stop")
}

// Kill ends the server at once, as the kernel's OOM killer or a crash of the server's
// process would: SIGKILL to the postmaster and every process it started. It writes nothing
// and tells no client; the kernel closes the processes' sockets, so the clients' connections
// break (a machine that dies instead leaves them silent: Freeze). The data directory stays as
// the crash left it.
func (s *Server) Kill() {
	s.tb.Helper()
	pm := s.postmaster()
	procs := append([]int{pm}, children(pm)...)
	for _, pid := range procs {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	s.frozen, s.killed = nil, true
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range procs {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// alive reports whether a process runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// Freeze stops the postmaster and every process it started (SIGSTOP): the server keeps its
// sockets, and the kernel still completes TCP handshakes on its port, but nothing answers,
// as with a hung host or a network partition that drops packets.
func (s *Server) Freeze() {
	s.tb.Helper()
	if s.frozen != nil {
		return
	}
	pm := s.postmaster()
	// The postmaster first, so that it starts no process while its children are stopped.
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		s.tb.Fatalf("pgfault: SIGSTOP postmaster %d: %v", pm, err)
	}
	s.frozen = []int{pm}
	for _, pid := range children(pm) {
		if syscall.Kill(pid, syscall.SIGSTOP) == nil {
			s.frozen = append(s.frozen, pid)
		}
	}
}

// Thaw resumes what Freeze stopped (SIGCONT).
func (s *Server) Thaw() {
	s.tb.Helper()
	for _, pid := range slices.Backward(s.frozen) {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	s.frozen = nil
}

// Frozen reports whether the server is frozen.
func (s *Server) Frozen() bool { return s.frozen != nil }

// Exec runs one statement on the postgres database, with a deadline.
func (s *Server) Exec(sql string, args ...any) {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		s.tb.Fatalf("pgfault: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		s.tb.Fatalf("pgfault: %s: %v", sql, err)
	}
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }
func (s *Server) log() string  { return filepath.Join(s.dir, "server.log") }

// remove stops the server whatever its state and deletes its directory.
func (s *Server) remove() {
	s.Thaw()
	if _, err := os.Stat(filepath.Join(s.data(), "postmaster.pid")); err == nil && !s.killed {
		if err := s.tryRun("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "-t", "60", "stop"); err != nil {
			s.tb.Logf("pgfault: stopping the server: %v", err)
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		s.tb.Logf("pgfault: removing %s: %v", s.dir, err)
	}
}

// postmaster is the server's pid, from the first line of postmaster.pid.
func (s *Server) postmaster() int {
	s.tb.Helper()
	f, err := os.Open(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		s.tb.Fatalf("pgfault: the server is not running: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil {
		s.tb.Fatalf("pgfault: postmaster.pid: %v", err)
	}
	return pid
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name (which may hold spaces) start after its ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func (s *Server) run(name string, args ...string) {
	s.tb.Helper()
	if err := s.tryRun(name, args...); err != nil {
		s.tb.Fatalf("pgfault: %s: %v\n%s", name, err, s.logTail())
	}
}

func (s *Server) tryRun(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	// Only what the tools need: a PG* variable of the test's environment (PGDATA, PGPORT)
	// must not point them elsewhere.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC"}
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// logTail is the end of the server's log, for failure messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.log())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// binaries finds the directory holding initdb and pg_ctl.
func binaries() (string, error) {
	has := func(dir string) bool {
		for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(EnvBin); dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%s=%s holds no initdb, pg_ctl and postgres", EnvBin, dir)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) }) // newest first
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("no Postgres server binaries (initdb, pg_ctl): install the postgresql package or set %s", EnvBin)
}

// version is the major version in a path like /usr/lib/postgresql/15/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// postgresUser is the identity to run the server as when the test runs as root.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, the server must run as another user, and there is no \"postgres\" user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func skipOrFail(tb testing.TB, err error) {
	tb.Helper()
	msg := "pgfault: no private Postgres server for this test: " + err.Error()
	if os.Getenv(EnvRequire) == "1" {
		tb.Fatalf("%s (%s=1 requires one)", msg, EnvRequire)
	}
	tb.Skip(msg)
}
