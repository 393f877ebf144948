package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// A store call is recorded under its store, operation and outcome: ok, or its error's code.
func TestStoreCallsLabelByOutcome(t *testing.T) {
	reg := prometheus.NewRegistry()
	observe := NewStoreCalls(reg).Observer("postgres")
	observe("ratings", nil, time.Millisecond)
	observe("ratings", apperr.Wrap(apperr.Unavailable, errors.New("timeout"), "down"), time.Second)
	observe("ping", errors.New("a bug"), time.Microsecond)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			series = append(series, strings.Join(labels, ","))
		}
	}
	want := "operation=ping,outcome=internal,store=postgres|operation=ratings,outcome=ok,store=postgres|operation=ratings,outcome=unavailable,store=postgres"
	if got := strings.Join(series, "|"); got != want {
		t.Fatalf("series %s\nwant   %s", got, want)
	}
}
