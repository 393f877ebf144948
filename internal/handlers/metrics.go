package handlers

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/metrics"
)

// httpMetrics are the per-request metrics every route gets.
type httpMetrics struct {
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "matchmaker_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by chi route pattern, method and status code.",
			Buckets: metrics.LatencyBuckets,
		}, []string{"route", "method", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matchmaker_http_requests_in_flight",
			Help: "HTTP requests being answered now.",
		}),
	}
	reg.MustRegister(m.duration, m.inFlight)
	return m
}

func (m *httpMetrics) observe(route, method string, status int, elapsed time.Duration) {
	m.duration.WithLabelValues(route, method, statusText(status)).Observe(elapsed.Seconds())
}

// statusText avoids an allocation for the common codes.
func statusText(code int) string {
	switch code {
	case 200:
		return "200"
	case 201:
		return "201"
	case 204:
		return "204"
	case 400:
		return "400"
	case 401:
		return "401"
	case 403:
		return "403"
	case 404:
		return "404"
	case 409:
		return "409"
	case 413:
		return "413"
	case 415:
		return "415"
	case 500:
		return "500"
	case 503:
		return "503"
	}
	return strconv.Itoa(code)
}
