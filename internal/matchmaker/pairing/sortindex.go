package pairing

// SortIndex fills order, which must have len(keys) elements, with 0..len(keys)-1 sorted by
// (keys[i], i): the queue's own index sort (a radix sort from radixMin keys on), for other
// packages that order players or tickets the same way. The keys must be finite; -0 and +0
// are equal.
func SortIndex(keys []float64, order []int32) { sortQueue(keys, order) }

// SortBuffers are SortIndex's work arrays, kept by a caller that sorts as many keys at
// every tick: the radix sort of 100,000 keys needs 2 MB of them.
type SortBuffers struct {
	keys []uint64
	idx  []int32
}

// SortIndex is the package's SortIndex, with its work arrays from b.
func (b *SortBuffers) SortIndex(keys []float64, order []int32) { sortQueueWith(keys, order, b) }
