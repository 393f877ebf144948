package db

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"
)

// Keepalive probes of the pool's TCP connections: an idle connection to a host that went
// away (a network partition, a dead machine) is found out in about 25 s instead of Go's
// default of about 2.5 minutes, so the pool does not hand it to a request. (A server
// process that is frozen while its host still runs answers the probes: only the call
// deadlines catch that.)
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 10 * time.Second, Interval: 5 * time.Second, Count: 3}

// goodbyeTimeout bounds how long pgx may wait for a server to answer the two messages it
// sends when it gives a connection up: a cancel request (on a new connection, after a call
// ran out of time) and a Terminate, after which it reads until the server closes. pgx waits up
// to 15 s for each; a frozen server answers neither, and the pool's Close waits for both.
const goodbyeTimeout = time.Second

// sockets dials the pool's connections (pool connections and pgx's cancel requests) and
// keeps every one it opened, so that a shutdown that runs out of time can close them all,
// whatever pgx is waiting for on them.
type sockets struct {
	dialer net.Dialer

	mu     sync.Mutex
	open   map[*socket]struct{}
	closed bool
}

func newSockets() *sockets {
	return &sockets{dialer: net.Dialer{KeepAliveConfig: keepAlive}, open: make(map[*socket]struct{})}
}

var errSocketsClosed = errors.New("db: the store is closed")

// dial is the pgconn DialFunc.
func (ss *sockets) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := ss.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	s := &socket{Conn: c, owner: ss}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		_ = c.Close()
		return nil, errSocketsClosed
	}
	ss.open[s] = struct{}{}
	return s, nil
}

// closeAll closes every open socket and refuses new ones; it returns how many it closed.
func (ss *sockets) closeAll() int {
	ss.mu.Lock()
	ss.closed = true
	open := ss.open
	ss.open = make(map[*socket]struct{})
	ss.mu.Unlock()
	for s := range open {
		_ = s.Conn.Close()
	}
	return len(open)
}

// socket is one connection the pool opened.
type socket struct {
	net.Conn
	owner   *sockets
	written bool // whether anything was written yet (only pgx's one goroutine writes)
}

// The protocol's code of a CancelRequest, and a whole Terminate message.
const cancelRequestCode = 80877102

var terminateMessage = []byte{'X', 0, 0, 0, 4}

// Write recognises the goodbyes (see goodbyeTimeout) and bounds the wait for their answer. A
// cancel request is the first message on its connection (a pool connection starts with a
// StartupMessage or an SSLRequest, whose codes differ); pgx writes a Terminate on its own.
func (s *socket) Write(b []byte) (int, error) {
	first := !s.written
	s.written = true
	if first && len(b) >= 8 && binary.BigEndian.Uint32(b[4:8]) == cancelRequestCode || bytes.Equal(b, terminateMessage) {
		_ = s.Conn.SetDeadline(time.Now().Add(goodbyeTimeout))
	}
	return s.Conn.Write(b)
}

func (s *socket) Close() error {
	s.owner.mu.Lock()
	delete(s.owner.open, s)
	s.owner.mu.Unlock()
	return s.Conn.Close()
}
