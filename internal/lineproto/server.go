package lineproto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

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
