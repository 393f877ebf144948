package pgfault

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Pgbouncer is a pgbouncer a test runs in front of a database: one client port, two
// database names on it, one pooled in transaction mode and one in session mode, both logging
// in to the target as its URL's user (auth_type any: any client is let in). Debian's
// pgbouncer package is looked for on PATH, then in /usr/sbin; without it StartPgbouncer
// skips the test, or fails it when MATCHMAKER_REQUIRE_TEST_DB=1.
type Pgbouncer struct {
	port int
	cmd  *exec.Cmd
	dir  string
}

// StartPgbouncer starts a pgbouncer on a free port in front of the database at target (a
// postgres:// URL of one host); it is stopped when the test ends.
func StartPgbouncer(tb testing.TB, target string) *Pgbouncer {
	tb.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr != nil {
			skipOrFail(tb, fmt.Errorf("no pgbouncer binary (Debian's package pgbouncer): %w", err))
		}
		bin = "/usr/sbin/pgbouncer"
	}
	cfg, err := pgconn.ParseConfig(target)
	if err != nil {
		tb.Fatal(err)
	}
	// pgbouncer refuses to run as root, like the server.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		if cred, err = postgresUser(); err != nil {
			skipOrFail(tb, err)
		}
	}
	dir, err := os.MkdirTemp("", "pgbouncer-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	b := &Pgbouncer{port: freePort(tb), dir: dir}
	server := fmt.Sprintf("host=%s port=%d dbname=%s user=%s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	ini := fmt.Sprintf(`[databases]
transaction = %[1]s pool_mode=transaction
session = %[1]s pool_mode=session

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %[2]d
unix_socket_dir =
auth_type = any
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
logfile = %[3]s
`, server, b.port, filepath.Join(dir, "pgbouncer.log"))
	conf := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(conf, []byte(ini), 0o644); err != nil {
		tb.Fatal(err)
	}
	b.cmd = exec.Command(bin, conf)
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := b.cmd.Start(); err != nil {
		tb.Fatalf("pgfault: start pgbouncer: %v", err)
	}
	tb.Cleanup(b.stop)
	b.waitListening(tb)
	return b
}

// waitListening waits until the client port accepts connections (pgbouncer starts in well
// under a second).
func (b *Pgbouncer) waitListening(tb testing.TB) {
	tb.Helper()
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)), time.Second)
		if err == nil {
			_ = c.Close()
			go func() { <-exited }()
			return
		}
		select {
		case err := <-exited:
			b.cmd = nil
			log, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
			tb.Fatalf("pgfault: pgbouncer exited: %v\n%s", err, log)
		case <-time.After(20 * time.Millisecond): // polling a port: nothing to wait on
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pgfault: pgbouncer not listening on %d after 10 s", b.port)
		}
	}
}

func (b *Pgbouncer) stop() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		_ = b.cmd.Process.Kill()
	}
}

// TransactionURL is the URL of the target database through pgbouncer in transaction mode.
func (b *Pgbouncer) TransactionURL() string { return b.url("transaction") }

// SessionURL is the URL of the target database through pgbouncer in session mode.
func (b *Pgbouncer) SessionURL() string { return b.url("session") }

func (b *Pgbouncer) url(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", b.port, name)
}
