package handlers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/api"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func TestHealthzAnswersWhileTheProcessIsUp(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	resp := exchange(t, h, http.MethodGet, "/healthz", "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d", resp.StatusCode)
	}
}

// pingStore is a Store whose reachability a test decides.
type pingStore struct {
	ratings.Store
	ping func(context.Context) error
}

func (s pingStore) Ping(ctx context.Context) error { return s.ping(ctx) }

func TestReadyzReflectsTheStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ping func(context.Context) error
		want int
	}{
		{"store reachable", func(context.Context) error { return nil }, http.StatusOK},
		{"store down", func(context.Context) error { return errors.New("connection refused") }, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewServer(Deps{Ratings: ratings.NewService(pingStore{Store: ratings.NewMemoryStore(nil), ping: tt.ping}, ratings.DefaultModel())})
			resp := exchange(t, h, http.MethodGet, "/readyz", "", "")
			if resp.StatusCode != tt.want {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

func TestOpenAPIServesTheEmbeddedSpec(t *testing.T) {
	t.Parallel()
	resp := exchange(t, NewServer(Deps{}), http.MethodGet, "/openapi.yaml", "", "")
	body, _ := io.ReadAll(resp.Body)
	if string(body) != string(api.OpenAPI) {
		t.Fatal("/openapi.yaml differs from api/openapi.yaml")
	}
}

func TestMetricsCountRequestsByRoutePattern(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := NewServer(Deps{Registry: reg})
	exchange(t, h, http.MethodGet, "/healthz", "", "")
	exchange(t, h, http.MethodGet, "/no/such/path/12345", "", "")
	resp := exchange(t, h, http.MethodGet, "/metrics", "", "")
	body, _ := io.ReadAll(resp.Body)
	text := string(body)
	for _, want := range []string{
		`matchmaker_http_request_duration_seconds_count{code="200",method="GET",route="/healthz"} 1`,
		`matchmaker_http_request_duration_seconds_count{code="404",method="GET",route="unmatched"} 1`,
		`matchmaker_http_request_duration_seconds_bucket{code="200",method="GET",route="/healthz",le="0.0001"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, "12345") {
		t.Error("a raw path leaked into a metric label")
	}
}

func TestUnknownRoutesAndMethodsAreProblems(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	if resp := exchange(t, h, http.MethodGet, "/v1/nothing", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown route: %d", resp.StatusCode)
	}
	if resp := exchange(t, h, http.MethodDelete, "/healthz", "", ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("wrong method: %d", resp.StatusCode)
	}
}

func TestRequestIDIsEchoedOrGenerated(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	resp := exchange(t, h, http.MethodGet, "/healthz", "", "", "X-Request-Id", "trace-abc")
	if got := resp.Header.Get("X-Request-Id"); got != "trace-abc" {
		t.Fatalf("echoed id = %q", got)
	}
	resp = exchange(t, h, http.MethodGet, "/healthz", "", "", "X-Request-Id", "bad id with spaces")
	if got := resp.Header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Fatalf("an unsafe id must be replaced, got %q", got)
	}
}
