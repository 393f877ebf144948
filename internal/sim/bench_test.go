package sim

import (
	"context"
	"strings"
	"syscall"
	"testing"
)

// BenchmarkRun times one configuration of each preset, 10,000 matches a run, and reports
// the wall time per match (ns/match) and the process's CPU time per match (cpu-ns/match, user
// and system, the garbage collector's included): on a shared machine the wall time also
// counts the time the run waited for a core.
func BenchmarkRun(b *testing.B) {
	for _, tc := range []struct{ preset, configuration string }{
		{"thesis", "pairing: thesis default"}, {"thesis", "tick: thesis default"}, {"thesis", "tick: learned rating"},
		{"live", "thesis default"}, {"live", "learned rating"},
		{"rules", "no rules"}, {"rules", "mode + maps"},
	} {
		b.Run(tc.preset+"/"+strings.NewReplacer(": ", "_", " + ", "+").Replace(tc.configuration), func(b *testing.B) {
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
			cpu := cpuNanos(b)
			for b.Loop() {
				if _, err := Run(context.Background(), &sc, cf, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sc.Matches), "ns/match")
			b.ReportMetric(float64(cpuNanos(b)-cpu)/float64(b.N*sc.Matches), "cpu-ns/match")
		})
	}
}

// cpuNanos is the CPU time the process has used so far.
func cpuNanos(b *testing.B) int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return u.Utime.Nano() + u.Stime.Nano()
}
