package handlers

import (
	"math"
	"time"
)

// durationOf is v units as a Duration, saturated at a Duration's limits instead of wrapped
// around them, so that the service's range check refuses a huge value rather than pass what it
// wrapped to (ttl_s=18446744075 was accepted as 1.29 s).
func durationOf(v int64, unit time.Duration) time.Duration {
	switch {
	case v > math.MaxInt64/int64(unit):
		return math.MaxInt64
	case v < math.MinInt64/int64(unit):
		return math.MinInt64
	}
	return time.Duration(v) * unit
}
