package handlers

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// thesisQueueBody is a /v1/matchmake body of n players with ratings uniform in [0, 2000).
func thesisQueueBody(n int) string {
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	var b strings.Builder
	b.WriteString(`{"team_size":5,"players":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"player-%05d","rating":%.3f}`, i, rng.Float64()*2000)
	}
	b.WriteString(`]}`)
	return b.String()
}

// BenchmarkMatchmakeHandler is the whole HTTP handler (middleware, decode, validate,
// matchmake, encode) without the network: the part of a request the service controls.
func BenchmarkMatchmakeHandler(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("players=%d", n), func(b *testing.B) {
			h := NewServer(Deps{Logger: slog.New(slog.DiscardHandler)})
			body := thesisQueueBody(n)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/matchmake", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				_, _ = io.Copy(io.Discard, rec.Body)
			}
		})
	}
}
