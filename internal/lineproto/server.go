package lineproto

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Config bounds what one client can hold. Zero fields take DefaultConfig's values.
type Config struct {
	// IdleTimeout closes a connection that sends no complete line for this long (after an
	// "ERROR idle timeout" line). It also bounds every write: a client that reads none of
	// its replies for this long is dropped.
	IdleTimeout time.Duration
	// MaxLineBytes is the longest line accepted, not counting its "\n" or "\r\n". A longer
	// line is answered "ERROR line too long" and skipped up to its newline; a client that
	// sends more than maxDiscard (64 KiB) more without a newline is disconnected.
	MaxLineBytes int
	// MaxConns caps the connections open at once; one more is answered
	// "ERROR too many connections" and closed.
	MaxConns int
	// MaxMutators caps the distinct mutators of one game; at most ratings.MaxMutators (the
	// most a rating context can list).
	MaxMutators int
	// CommandTimeout bounds the store reads of one command; past it the command is answered
	// "ERROR store unavailable".
	CommandTimeout time.Duration
	// MaxConnsPerAddr caps the connections open at once from one client address, so that one
	// client cannot take every one of MaxConns; one more is answered
	// "ERROR too many connections from your address" and closed.
	MaxConnsPerAddr int
	// SecretHash, when not zero, is the SHA-256 of the shared secret a client must send first
	// ("AUTH secret") before any other command, within AuthTimeout; see the package doc.
	SecretHash [sha256.Size]byte
	// AuthTimeout bounds the wait for the AUTH line when a secret is set.
	AuthTimeout time.Duration
}

// DefaultConfig returns the defaults: 5 min idle, 512-byte lines, 1024 connections (64 from
// one address), 64 mutators a game, 2 s a command, 10 s for the AUTH line; no secret.
func DefaultConfig() Config {
	return Config{
		IdleTimeout:     5 * time.Minute,
		MaxLineBytes:    512,
		MaxConns:        1024,
		MaxConnsPerAddr: 64,
		MaxMutators:     ratings.MaxMutators,
		CommandTimeout:  2 * time.Second,
		AuthTimeout:     10 * time.Second,
	}
}

// requiresAuth reports whether clients must send AUTH first.
func (c Config) requiresAuth() bool { return c.SecretHash != [sha256.Size]byte{} }

// Limits of the configuration.
const (
	// MinLineBytes leaves room for the longest valid line: "PLAYER " and a
	// ratings.MaxIDLen-byte id.
	MinLineBytes = 7 + ratings.MaxIDLen
	// MaxLineLimit keeps the per-connection read buffer small.
	MaxLineLimit = 64 << 10
)

// Internal bounds that need no configuration.
const (
	// maxDiscard is how much of an over-long line is skipped, past MaxLineBytes, while
	// waiting for its newline before the connection is dropped.
	maxDiscard = 64 << 10
	// lingerTimeout is how long a closing connection drains what the client still sends after
	// our last reply and FIN, so that closing with unread input (which makes the kernel send
	// a RST) cannot destroy that reply before the client reads it. net/http waits as long.
	lingerTimeout = 500 * time.Millisecond
	// maxRejecting bounds the connections being refused (and lingered on) at once; past it a
	// refused connection is closed at once after its ERROR line.
	maxRejecting = 16
)

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.MaxLineBytes == 0 {
		c.MaxLineBytes = d.MaxLineBytes
	}
	if c.MaxConns == 0 {
		c.MaxConns = d.MaxConns
	}
	if c.MaxMutators == 0 {
		c.MaxMutators = d.MaxMutators
	}
	if c.CommandTimeout == 0 {
		c.CommandTimeout = d.CommandTimeout
	}
	if c.MaxConnsPerAddr == 0 {
		c.MaxConnsPerAddr = d.MaxConnsPerAddr
	}
	if c.AuthTimeout == 0 {
		c.AuthTimeout = d.AuthTimeout
	}
	return c
}

// Validate reports the first setting out of range (zero fields take their defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.IdleTimeout < 0:
		return errors.New("lineproto: IdleTimeout must be positive")
	case c.MaxLineBytes < MinLineBytes || c.MaxLineBytes > MaxLineLimit:
		return fmt.Errorf("lineproto: MaxLineBytes must be in [%d, %d]", MinLineBytes, MaxLineLimit)
	case c.MaxConns < 0:
		return errors.New("lineproto: MaxConns must be positive")
	case c.MaxMutators < 0 || c.MaxMutators > ratings.MaxMutators:
		return fmt.Errorf("lineproto: MaxMutators must be in [1, %d]", ratings.MaxMutators)
	case c.CommandTimeout < 0:
		return errors.New("lineproto: CommandTimeout must be positive")
	case c.MaxConnsPerAddr < 0:
		return errors.New("lineproto: MaxConnsPerAddr must be positive")
	case c.AuthTimeout < 0:
		return errors.New("lineproto: AuthTimeout must be positive")
	}
	return nil
}

// Server answers the line protocol from a rating store. Each connection is served by one
// goroutine, which handles its commands in order.
type Server struct {
	ratings *ratings.Service
	logger  *slog.Logger
	cfg     Config
	cfgErr  error
	metrics *Metrics

	// baseCtx is the parent of every command's context. It is cancelled only when Shutdown
	// stops waiting, so that a graceful shutdown lets in-flight store reads finish.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	mu        sync.Mutex
	ln        net.Listener
	conns     map[*conn]struct{}
	perAddr   map[string]int // open connections by client address (host, no port)
	rejecting int
	closing   bool
	// wg counts Serve's accept loop, every connection and every refusal; an Add happens
	// under mu with closing false, so none can follow Shutdown's Wait.
	wg sync.WaitGroup
}

// NewServer returns a server answering from the ratings service. logger may be nil (nothing is logged),
// metrics may be nil (nothing is measured). A configuration error (see Config.Validate) is
// returned by Serve.
func NewServer(svc *ratings.Service, logger *slog.Logger, cfg Config, metrics *Metrics) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(context.Background())
	return &Server{
		ratings:    svc,
		logger:     logger,
		cfg:        cfg.withDefaults(),
		cfgErr:     cfg.Validate(),
		metrics:    metrics,
		baseCtx:    base,
		cancelBase: cancel,
		conns:      make(map[*conn]struct{}),
		perAddr:    make(map[string]int),
	}
}

// Serve accepts connections on ln until ctx is cancelled or Shutdown is called, and then
// returns nil; it returns an error only if ln fails for good or the configuration is invalid.
// Cancelling ctx starts the same graceful shutdown as Shutdown (stop accepting, close the idle
// connections, let each in-flight command answer) without waiting for it; call Shutdown to
// wait. Serve closes ln. It may be called once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.cfgErr != nil {
		ln.Close()
		return s.cfgErr
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	if s.ln != nil {
		s.mu.Unlock()
		return errors.New("lineproto: Serve called twice")
	}
	s.ln = ln
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	stop := context.AfterFunc(ctx, s.beginShutdown)
	defer stop()

	s.logger.Info("line protocol listening", "addr", ln.Addr().String(),
		"max_conns", s.cfg.MaxConns, "idle_timeout", s.cfg.IdleTimeout)
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				return nil
			}
			var ne net.Error
			//lint:ignore SA1019 Temporary is still how an accept loop tells EMFILE from a dead listener.
			if errors.As(err, &ne) && ne.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logger.Warn("line protocol: accept failed; retrying", "err", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("lineproto: accept: %w", err)
		}
		delay = 0
		s.admit(nc)
	}
}

// Shutdown stops the server gracefully: it stops accepting, closes idle connections at once,
// lets each busy connection finish its command, write the reply and close, and waits for all
// of them. If ctx ends first, Shutdown cancels the store reads still running, closes every
// connection and returns ctx's error. It may be called more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.beginShutdown()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancelBase()
		return nil
	case <-ctx.Done():
		s.cancelBase()
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

func (s *Server) beginShutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	s.closing = true
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.interrupt()
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// admit starts serving nc, or refuses it when MaxConns are open.
func (s *Server) admit(nc net.Conn) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		nc.Close()
		return
	}
	addr := hostOf(nc.RemoteAddr())
	if full, fromAddr := len(s.conns) >= s.cfg.MaxConns, s.perAddr[addr] >= s.cfg.MaxConnsPerAddr; full || fromAddr {
		linger := s.rejecting < maxRejecting
		if linger {
			s.rejecting++
			s.wg.Add(1)
		}
		s.mu.Unlock()
		s.metrics.connRejected()
		msg := "ERROR too many connections\n"
		if full {
			s.logger.Warn("line protocol: too many connections; refused one",
				"remote", nc.RemoteAddr().String(), "max_conns", s.cfg.MaxConns)
		} else {
			msg = "ERROR too many connections from your address\n"
			s.logger.Warn("line protocol: too many connections from one address; refused one",
				"remote", nc.RemoteAddr().String(), "max_conns_per_addr", s.cfg.MaxConnsPerAddr)
		}
		if linger {
			go s.refuse(nc, msg)
		} else {
			nc.SetWriteDeadline(time.Now().Add(lingerTimeout))
			io.WriteString(nc, msg)
			nc.Close()
		}
		return
	}
	c := newConn(s, nc)
	c.addr = addr
	s.perAddr[addr]++
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.metrics.connOpened()
	go c.serve()
}

// refuse tells a connection over the cap why it is closed, and lingers so that the client
// can read it.
func (s *Server) refuse(nc net.Conn, msg string) {
	defer func() {
		s.mu.Lock()
		s.rejecting--
		s.mu.Unlock()
		s.wg.Done()
	}()
	nc.SetWriteDeadline(time.Now().Add(lingerTimeout))
	if _, err := io.WriteString(nc, msg); err != nil {
		nc.Close()
		return
	}
	lingeringClose(nc)
}

// forget removes a closed connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.perAddr[c.addr]--; s.perAddr[c.addr] <= 0 {
		delete(s.perAddr, c.addr)
	}
	s.mu.Unlock()
	s.metrics.connClosed()
	s.wg.Done()
}

// hostOf is a connection's client address without its port.
func hostOf(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// lingeringClose sends FIN after what was written, drains what the client still sends for up
// to lingerTimeout (or until it closes), and closes.
func lingeringClose(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		nc.SetReadDeadline(time.Now().Add(lingerTimeout))
		io.Copy(io.Discard, io.LimitReader(nc, maxDiscard))
	}
	nc.Close()
}

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

// handle answers one line.
func (c *conn) handle(line []byte) {
	start := time.Now()
	cmd, err := ParseLine(string(line))
	if err == nil && cmd.Kind != KindNone && c.authed {
		c.idleUntil = start.Add(c.s.cfg.IdleTimeout)
	}
	if !c.authed && (cmd.Kind != KindNone || err != nil) { // any line but an empty one
		c.authenticate(cmd, err)
		return
	}
	var o outcome
	switch {
	case err != nil:
		if cmd.Kind == KindGame {
			c.setGame("") // the client thinks a game started: forget the last one
		}
		c.errorLine(reason(err))
		o = outcomeError
	case cmd.Kind == KindNone:
		return
	case cmd.Kind == KindAuth:
		o = outcomeOK // no secret required, or sent already: nothing to do
	case cmd.Kind == KindGame:
		c.setGame(strings.Clone(cmd.Arg)) // not a slice of the line: kept for the game
	case cmd.Kind == KindMutator:
		o = c.addMutator(cmd.Arg)
	default:
		o = c.query(cmd)
	}
	c.s.metrics.command(cmd.Kind, o, time.Since(start))
}

// authenticate answers the first command of a connection that must authenticate: AUTH with
// the secret (compared as hashes, in constant time) lets the connection in, silently; anything
// else is answered with an ERROR line and the connection is closed.
func (c *conn) authenticate(cmd Command, err error) {
	sum := sha256.Sum256([]byte(cmd.Arg))
	switch {
	case err == nil && cmd.Kind == KindAuth && subtle.ConstantTimeCompare(sum[:], c.s.cfg.SecretHash[:]) == 1:
		c.authed = true
		c.idleUntil = time.Now().Add(c.s.cfg.IdleTimeout)
		c.s.metrics.command(KindAuth, outcomeOK, 0)
		return
	case cmd.Kind == KindAuth:
		c.s.logger.Warn("line protocol: authentication failed; closed the connection", "remote", c.remote)
		c.errorLine("auth failed")
	default:
		c.errorLine("auth required: send AUTH <secret> first")
	}
	c.s.metrics.command(KindAuth, outcomeError, 0)
	c.done = true
}

func (c *conn) setGame(game string) {
	c.game = game
	c.mutators = c.mutators[:0]
	c.rctx, c.rctxOK = ratings.Context{}, false
}

func (c *conn) addMutator(name string) outcome {
	if c.game == "" {
		c.errorLine("no GAME yet")
		return outcomeError
	}
	for _, m := range c.mutators {
		if strings.EqualFold(m, name) { // names are ASCII (ParseLine checked)
			return outcomeOK
		}
	}
	if len(c.mutators) >= c.s.cfg.MaxMutators {
		c.errorLine("too many mutators (at most " + strconv.Itoa(c.s.cfg.MaxMutators) + " a game)")
		return outcomeError
	}
	c.mutators = append(c.mutators, strings.ToLower(strings.Clone(name)))
	c.rctxOK = false
	return outcomeOK
}

// query answers PLAYER, BOT and MEANBOT.
func (c *conn) query(cmd Command) outcome {
	if c.game == "" {
		c.errorLine("no GAME yet")
		return outcomeError
	}
	ctx, cancel := context.WithTimeout(c.s.baseCtx, c.s.cfg.CommandTimeout)
	defer cancel()
	rc, err := c.ratingContext(ctx)
	if err != nil {
		return c.storeFailed(cmd, err)
	}
	switch cmd.Kind {
	case KindPlayer, KindBot:
		p := ratings.Participant{ID: cmd.Arg, Bot: cmd.Kind == KindBot}
		weights, err := c.s.ratings.Weights(ctx, rc, []ratings.Participant{p})
		if err != nil {
			return c.storeFailed(cmd, err)
		}
		w := weights[0]
		if !w.Rated && cmd.Kind == KindPlayer {
			c.replyUnknown(cmd) // "PLAYER id": the client uses its default
			return outcomeUnknown
		}
		// The seed's BOT always answers with a weight: for a bot not rated, the service's
		// rule (the context's mean bot weight), as over HTTP.
		c.reply(cmd, w.Value, -1)
		if !w.Rated {
			return outcomeUnknown
		}
		return outcomeOK
	default: // KindMeanBot
		mean, n, err := c.s.ratings.BotMean(ctx, rc)
		if err != nil {
			return c.storeFailed(cmd, err)
		}
		c.reply(cmd, mean, n)
		return outcomeOK
	}
}

// ratingContext is the connection's rating context under the current mutator policy,
// read once per game (and again after each new MUTATOR).
func (c *conn) ratingContext(ctx context.Context) (ratings.Context, error) {
	if c.rctxOK {
		return c.rctx, nil
	}
	rc, err := c.s.ratings.Context(ctx, c.game, c.mutators)
	if err != nil {
		return ratings.Context{}, err
	}
	c.rctx, c.rctxOK = rc, true
	return rc, nil
}

func (c *conn) storeFailed(cmd Command, err error) outcome {
	c.s.logger.Warn("line protocol: store read failed", "command", cmd.Kind.String(),
		"remote", c.remote, "err", err)
	c.errorLine("store unavailable")
	return outcomeError
}

// reply writes "KEYWORD [arg] weight" and, when count >= 0, " count" (MEANBOT).
func (c *conn) reply(cmd Command, weight float64, count int) {
	c.replyStart(cmd)
	c.num = append(c.num[:0], ' ')
	c.num = strconv.AppendFloat(c.num, weight, 'f', 2, 64)
	if count >= 0 {
		c.num = append(c.num, ' ')
		c.num = strconv.AppendInt(c.num, int64(count), 10)
	}
	c.num = append(c.num, '\n')
	c.w.Write(c.num)
}

// replyUnknown writes "PLAYER id": no weight known.
func (c *conn) replyUnknown(cmd Command) {
	c.replyStart(cmd)
	c.w.WriteByte('\n')
}

func (c *conn) replyStart(cmd Command) {
	c.w.WriteString(cmd.Kind.String())
	if cmd.Arg != "" {
		c.w.WriteByte(' ')
		c.w.WriteString(cmd.Arg)
	}
}

func (c *conn) errorLine(msg string) {
	c.w.WriteString("ERROR ")
	c.w.WriteString(msg)
	c.w.WriteByte('\n')
}
