//go:build race

package sim

// raceDetector is true under -race, where the simulator runs about 16 times slower: the long
// runs shrink to their -short size.
const raceDetector = true
