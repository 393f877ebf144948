//go:build race

package sim

// raceDetector is true under -race, where the simulator runs many times slower: the long
// runs shrink to their -short size.
const raceDetector = true
