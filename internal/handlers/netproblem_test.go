package handlers

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMethodNotAllowedSaysWhatIsAllowed: a 405 carries Allow with the path's methods.
func TestMethodNotAllowedSaysWhatIsAllowed(t *testing.T) {
	h := NewServer(Deps{Auth: &Auth{Off: true}})
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodPost, "/healthz", "GET"},
		{http.MethodGet, "/v1/results", "POST"},
		{http.MethodDelete, "/v1/mutators/instagib", "PUT"},
		{http.MethodPut, "/v1/players/alice/ratings", "GET"},
	} {
		resp := exchange(t, h, tc.method, tc.path, "", "")
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d with Allow %q, want 405 with %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), tc.allow)
		}
	}
}

// TestNetHTTPErrorsAreProblems: requests net/http refuses before any handler (a malformed
// request line, no Host, headers over the limit, an unknown transfer coding) are answered
// with a problem document through ProblemListener, and ordinary answers pass unchanged.
func TestNetHTTPErrorsAreProblems(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: NewServer(Deps{}), MaxHeaderBytes: 1 << 10, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ProblemListener(ln)) }()
	defer srv.Close()

	send := func(raw string) *http.Response {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		return resp
	}
	for _, tc := range []struct {
		name, raw string
		status    int
	}{
		{"malformed request line", "GARBAGE\r\n\r\n", http.StatusBadRequest},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", http.StatusBadRequest},
		{"malformed header", "GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", http.StatusBadRequest},
		{"headers too large", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"unknown transfer coding", "POST /v1/matchmake HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", http.StatusNotImplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := send(tc.raw)
			var p problem
			if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
				t.Fatalf("%d: the body is not a problem: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != tc.status || p.Status != tc.status || p.Type == "" || p.Title == "" || p.Detail == "" ||
				resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("X-Request-Id") == "" ||
				p.RequestID != resp.Header.Get("X-Request-Id") {
				t.Fatalf("%d %v %+v", resp.StatusCode, resp.Header, p)
			}
		})
	}
	// A handler's own answers, text/plain ones included, go through untouched.
	resp := send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics through the listener: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp = send("POST /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
		t.Fatalf("a handler's 405 through the listener: %d %v", resp.StatusCode, resp.Header)
	}
}
