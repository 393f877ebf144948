package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The page and its files are served with the policy; /console redirects to the page; nothing
// else of the embedded tree is reachable; the page loads nothing from elsewhere.
func TestHandler(t *testing.T) {
	h := Handler()
	get := func(path string) *http.Response {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Result()
	}
	if resp := get("/console"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/console/" {
		t.Errorf("/console: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for path, typ := range map[string]string{"/console/": "text/html", "/console/console.js": "text/javascript",
		"/console/console.css": "text/css", "/console/uPlot.iife.min.js": "text/javascript"} {
		resp := get(path)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), typ) ||
			resp.Header.Get("Content-Security-Policy") != Policy || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %q, policy %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"))
		}
		if path == "/console/" {
			b, _ := io.ReadAll(resp.Body)
			for _, bad := range []string{"http://", "https://", "<script>", "style=", "onclick"} {
				if strings.Contains(string(b), bad) {
					t.Errorf("the page has %q: nothing from elsewhere, no inline script or style", bad)
				}
			}
		}
	}
	for _, path := range []string{"/console/nope.js", "/console/../console.go", "/console/static/console.js"} {
		if resp := get(path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
}
