package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
)

// allowedMethods is the Allow header of a 405 for r: the methods routes answers on its path.
// (chi sets it in its own 405 handler only, not in a custom one such as ours.)
func allowedMethods(routes chi.Routes, r *http.Request) string {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if routes.Match(chi.NewRouteContext(), m, path) {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// ProblemListener makes net/http's own error answers problem+json documents like every other
// error of the service. Before a request reaches any handler, net/http answers a request it
// cannot parse itself, on the raw connection: 400 (a malformed request line or header, a
// missing Host), 431 (headers over MaxHeaderBytes), 501 (an unknown transfer coding), as
// text/plain. http.Server has no hook for these (its ErrorLog only logs), so the listener's
// connections recognise that canned answer, written in one piece as a status line followed
// directly by "Content-Type: text/plain; charset=utf-8" and "Connection: close" (a handler's
// answer has its headers sorted, Connection first, and a Date), and write a problem document
// with the same status instead. Connections that break before a request was read get no
// answer at all from net/http, so none from the service either.
func ProblemListener(l net.Listener) net.Listener {
	return problemListener{Listener: l, ids: newRequestIDs()}
}

type problemListener struct {
	net.Listener
	ids *requestIDs
}

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return problemConn{Conn: c, ids: l.ids}, nil
}

type problemConn struct {
	net.Conn
	ids *requestIDs
}

// cannedError matches net/http's own error answer (net/http.conn.serve).
var cannedError = regexp.MustCompile(`\AHTTP/1\.1 ([0-9]{3}) [^\r\n]*\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n([^\r\n]*)\z`)

func (c problemConn) Write(b []byte) (int, error) {
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 ")) || !bytes.Contains(b, []byte("\r\nConnection: close\r\n\r\n")) {
		return c.Conn.Write(b)
	}
	m := cannedError.FindSubmatch(b)
	if m == nil {
		return c.Conn.Write(b)
	}
	status, _ := strconv.Atoi(string(m[1]))
	if _, err := c.Conn.Write(netProblem(status, string(m[2]), c.ids.new())); err != nil {
		return 0, err
	}
	return len(b), nil // what net/http asked to write has been answered
}

// netProblem is the whole HTTP answer for one of net/http's own errors.
func netProblem(status int, detail, requestID string) []byte {
	slug, title := "invalid", "Invalid request"
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		slug, title = "header-too-large", "Request header fields too large"
	case http.StatusNotImplemented:
		slug, title = "not-implemented", "Not implemented"
	}
	body, _ := json.Marshal(problem{Type: "urn:matchmaker:problem:" + slug, Title: title, Status: status,
		Detail: detail, RequestID: requestID})
	body = append(body, '\n')
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: %d\r\n"+
		"Content-Type: application/problem+json\r\nX-Request-Id: %s\r\n\r\n", status, http.StatusText(status), len(body), requestID)
	b.Write(body)
	return b.Bytes()
}

// CloseWrite half-closes the connection when the underlying one can, as net/http does after a
// 431 so that the client reads the answer before the connection goes.
func (c problemConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
