// Package console is the web page the service serves at /console: static files embedded in
// the binary (no build step), which ask the API with the key typed into the page. The page
// holds no data of its own, so it is served without a key.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Policy is the page's Content-Security-Policy: its own scripts, styles and API calls only
// (the charting library is vendored, nothing is loaded from elsewhere), no inline script, no
// framing. uPlot sizes its canvases through the style property, which CSP does not govern.
const Policy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console: /console redirects to /console/, which is index.html, and
// /console/NAME is the file NAME of static/.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the directory is embedded: it exists
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/console" {
			http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", Policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache") // revalidated, so a new release's page is the one shown
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, "/console")
		files.ServeHTTP(w, r2)
	})
}
