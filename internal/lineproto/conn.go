package lineproto

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// aLongTimeAgo is a deadline in the past: setting it interrupts a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// conn is one client connection. Its goroutine owns everything but mu's fields.
type conn struct {
	s      *Server
	nc     net.Conn
	r      *bufio.Reader
	w      *bufio.Writer
	remote string
	addr   string // remote without its port: the per-address cap's key

	mu      sync.Mutex // guards closing and arming the read deadline, against interrupt
	closing bool

	// idleUntil is when the connection is closed for idleness: IdleTimeout after its last
	// command (empty lines do not count), AuthTimeout after it opened until it authenticates.
	idleUntil time.Time
	authed    bool // sent the secret, or none is required
	done      bool // close after the replies written so far (a failed AUTH)

	// The game being played on this connection.
	game     string          // "" before the first GAME
	mutators []string        // lower case, distinct, at most cfg.MaxMutators
	rctx     ratings.Context // the rating context of game and mutators, when rctxOK
	rctxOK   bool

	num []byte // scratch for formatting numbers
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		s:      s,
		nc:     nc,
		r:      bufio.NewReaderSize(nc, s.cfg.MaxLineBytes+2), // the line, "\r\n"
		w:      bufio.NewWriterSize(deadlineWriter{nc, s.cfg.IdleTimeout}, 4096),
		remote: nc.RemoteAddr().String(),
		num:    make([]byte, 0, 32),
		authed: !s.cfg.requiresAuth(),
	}
	c.idleUntil = time.Now().Add(s.cfg.IdleTimeout)
	if !c.authed {
		c.idleUntil = time.Now().Add(min(s.cfg.AuthTimeout, s.cfg.IdleTimeout))
	}
	return c
}

// deadlineWriter gives every write to the network IdleTimeout to complete.
type deadlineWriter struct {
	nc      net.Conn
	timeout time.Duration
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.nc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.nc.Write(p)
}

// interrupt makes the connection close once its current command (if any) is answered: a
// blocked read returns at once, and no read starts after it.
func (c *conn) interrupt() {
	c.mu.Lock()
	c.closing = true
	c.nc.SetReadDeadline(aLongTimeAgo)
	c.mu.Unlock()
}

// armRead prepares a read: false when the connection is closing. The read waits until
// idleUntil, which only a command moves (not an empty line: a client sending one a minute
// used to hold its connection for ever).
func (c *conn) armRead(waiting bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || c.done {
		return false
	}
	if waiting {
		c.nc.SetReadDeadline(c.idleUntil)
	}
	return true
}

func (c *conn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// lineBuffered reports whether a whole line is already in the read buffer.
func (c *conn) lineBuffered() bool {
	n := c.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := c.r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

func (c *conn) serve() {
	graceful := false
	defer func() {
		if p := recover(); p != nil {
			c.s.logger.Error("line protocol: panic serving a connection; closed it",
				"remote", c.remote, "panic", p, "stack", string(debug.Stack()))
			graceful = false
		}
		if graceful && c.w.Flush() == nil {
			lingeringClose(c.nc)
		} else {
			c.nc.Close()
		}
		c.s.logger.Debug("line protocol: connection closed", "remote", c.remote)
		c.s.forget(c) // last: Shutdown may return once it has
	}()
	c.s.logger.Debug("line protocol: connection opened", "remote", c.remote)

	limit := c.s.cfg.MaxLineBytes
	for {
		// Reply to a batch of pipelined lines at once, but never wait for input with
		// replies still buffered.
		waiting := !c.lineBuffered()
		if waiting && c.w.Flush() != nil {
			return
		}
		if !c.armRead(waiting) {
			graceful = true
			return
		}
		line, err := c.r.ReadSlice('\n')
		switch {
		case err == nil:
			line = line[:len(line)-1]
			line = bytes.TrimSuffix(line, []byte{'\r'})
			if len(line) > limit {
				c.tooLong()
				continue
			}
			c.handle(line)
		case errors.Is(err, bufio.ErrBufferFull):
			c.tooLong()
			if c.w.Flush() != nil {
				return
			}
			if !c.discardLine() {
				graceful = true
				return
			}
		case errors.Is(err, io.EOF):
			// The client closed its side; a last line without "\n" is still a line (the
			// client may be waiting for its reply on a half-closed connection).
			if line = bytes.TrimSuffix(line, []byte{'\r'}); len(line) > limit {
				c.tooLong()
			} else if len(line) > 0 {
				c.handle(line)
			}
			graceful = true
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			if !c.isClosing() {
				c.s.logger.Debug("line protocol: idle connection closed", "remote", c.remote)
				c.w.WriteString("ERROR idle timeout\n")
			}
			graceful = true
			return
		default:
			return // reset by the peer, or closed by a forced shutdown
		}
	}
}

// discardLine skips the rest of an over-long line: true once its newline is read, false if
// the client sent maxDiscard bytes without one, closed, stalled or the server is closing.
func (c *conn) discardLine() bool {
	skipped := 0
	for skipped <= maxDiscard {
		b, err := c.r.ReadSlice('\n')
		skipped += len(b)
		switch {
		case err == nil:
			return true
		case !errors.Is(err, bufio.ErrBufferFull):
			return false
		}
	}
	c.s.logger.Debug("line protocol: line without end; closed the connection", "remote", c.remote)
	return false
}

func (c *conn) tooLong() {
	c.s.metrics.command(kindInvalid, outcomeError, -1)
	c.w.WriteString("ERROR line too long\n")
}
