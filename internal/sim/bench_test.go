package sim

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkRun times one configuration of each preset, 10,000 matches a run, and reports
// the time per match.
func BenchmarkRun(b *testing.B) {
	for _, tc := range []struct{ preset, configuration string }{
		{"thesis", "pairing: thesis default"}, {"thesis", "tick: thesis default"}, {"thesis", "tick: learned rating"},
		{"live", "thesis default"}, {"live", "learned rating"},
	} {
		b.Run(tc.preset+"/"+strings.ReplaceAll(tc.configuration, ": ", "_"), func(b *testing.B) {
			sc, err := Preset(tc.preset)
			if err != nil {
				b.Fatal(err)
			}
			sc.Matches = 10_000
			var cf Configuration
			for _, c := range sc.Configurations {
				if c.Name == tc.configuration {
					cf = c
				}
			}
			if cf.Name == "" {
				b.Fatalf("preset %s has no configuration %q", tc.preset, tc.configuration)
			}
			for b.Loop() {
				if _, err := Run(context.Background(), &sc, cf, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sc.Matches), "ns/match")
		})
	}
}
