package sim

import "math/rand/v2"

// Streams of the run's random numbers. Every configuration draws the same population and
// the same arrival times from the seed (common random numbers), so configurations differ
// only by what the queue does.
const (
	streamPopulation = iota + 1
	streamArrivals
	streamPick
	streamPlay
	streamMatcher
	streamAttributes
	streamAcceptance
	streamRoles
	streamAvoid
)

func stream(seed uint64, s int) *rand.Rand { return rand.New(rand.NewPCG(seed, uint64(s))) }
