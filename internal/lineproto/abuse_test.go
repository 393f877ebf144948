package lineproto

import (
	"bufio"
	"crypto/sha256"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Empty lines do not keep a connection open: a client sending one every 20 ms is closed
// once IdleTimeout has passed since its last command (it used to be held for ever).
func TestEmptyLinesDoNotResetTheIdleTimeout(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	cfg := DefaultConfig()
	cfg.IdleTimeout = 300 * time.Millisecond
	_, addr := start(t, st, cfg, nil)
	c := dial(t, addr)
	c.mustSend("GAME ctf")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if c.send("\n") != nil {
					return
				}
			}
		}
	}()
	// read waits up to 5 s, over fifteen times the idle timeout.
	if got, err := c.read(); err != nil || got != "ERROR idle timeout" {
		t.Fatalf("a client sending only empty lines: %q, %v; want ERROR idle timeout", got, err)
	}
}

// With a secret, a connection must send AUTH with it first: another command or a wrong
// secret is answered with an ERROR line and the connection is closed; the right one lets the
// connection in without a reply; none within AuthTimeout closes it.
func TestAuthWithASharedSecret(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	cfg := DefaultConfig()
	cfg.SecretHash = sha256.Sum256([]byte("s3cret-for-mods"))
	cfg.AuthTimeout = 300 * time.Millisecond
	reg := prometheus.NewRegistry()
	_, addr := start(t, st, cfg, NewMetrics(reg))

	first := dial(t, addr)
	first.mustSend("", "PLAYER alice") // an empty line is no command
	if got := first.mustRead(); got != "ERROR auth required: send AUTH <secret> first" {
		t.Fatalf("a command before AUTH: %q", got)
	}
	first.expectClosed()

	unknown := dial(t, addr)
	if got, _ := unknown.ask("HELLO"); got != "ERROR auth required: send AUTH <secret> first" {
		t.Fatalf("an unknown command before AUTH: %q", got)
	}
	unknown.expectClosed()

	wrong := dial(t, addr)
	if got, _ := wrong.ask("AUTH guess"); got != "ERROR auth failed" {
		t.Fatalf("a wrong secret: %q", got)
	}
	wrong.expectClosed()

	right := dial(t, addr)
	right.mustSend("auth s3cret-for-mods", "GAME ctf")
	right.expect("MEANBOT", w.meanBot(w.context("ctf")))
	right.expect("AUTH s3cret-for-mods\nMEANBOT", w.meanBot(w.context("ctf"))) // again: harmless

	silent := dial(t, addr)
	if got := silent.mustRead(); got != "ERROR idle timeout" {
		t.Fatalf("no AUTH within AuthTimeout: %q", got)
	}
	silent.expectClosed()

	if got := metric(t, reg, commands("AUTH", "error")); got != 3 {
		t.Errorf("failed AUTH counted %v, want 3", got)
	}
}

// One address may hold MaxConnsPerAddr connections; one more is refused, while another
// address still gets in.
func TestTheConnectionCapPerAddress(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	w := want{t, st}
	cfg := DefaultConfig()
	cfg.MaxConnsPerAddr = 2
	_, addr := start(t, st, cfg, nil)
	mean := w.meanBot(w.context("ctf"))
	a, b := dial(t, addr), dial(t, addr)
	for _, c := range []*client{a, b} {
		c.mustSend("GAME ctf")
		c.expect("MEANBOT", mean)
	}
	third := dial(t, addr)
	third.mustSend("GAME ctf", "MEANBOT")
	if got := third.mustRead(); got != "ERROR too many connections from your address" {
		t.Fatalf("a third connection from one address: %q", got)
	}
	third.expectClosed()

	// 127.0.0.2 is another address on the same loopback interface (Linux).
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from 127.0.0.2: %v", err)
	}
	other := &client{t: t, nc: nc, r: bufio.NewReader(nc)}
	t.Cleanup(func() { nc.Close() })
	other.mustSend("GAME ctf")
	other.expect("MEANBOT", mean)
}
