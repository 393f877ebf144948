package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile profiles the soak itself into path (nothing when it is empty) until the
// returned function is called: the driver shares the host's cores with what it measures,
// so its own cost is part of every figure.
func startCPUProfile(path string) (stop func(logf func(string, ...any)), err error) {
	none := func(func(string, ...any)) {}
	if path == "" {
		return none, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return none, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return none, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func(logf func(string, ...any)) {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			logf("-cpuprofile: %v", err)
			return
		}
		logf("the soak's CPU profile over the arrivals is in %s", path)
	}, nil
}
