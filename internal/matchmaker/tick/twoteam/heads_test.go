package twoteam

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// The bit-set operations on head counts agree with the plain set operations, for every
// team size (one word up to 7, up to five words at 16).
func TestHeadsAgreeWithPlainSets(t *testing.T) {
	t.Parallel()
	type set map[[2]int]bool
	rng := rand.New(rand.NewPCG(7, 7))
	for ts := 1; ts <= matchrules.MaxTeamSize; ts++ {
		var hs headSpace
		hs.init(ts)
		toHeads := func(s set) (h headSet) {
			for k := range s {
				b := k[0]*(ts+1) + k[1]
				h[b/64] |= 1 << (b % 64)
			}
			return h
		}
		for range 200 {
			s := set{}
			for x := 0; x <= ts; x++ {
				for y := 0; y <= ts; y++ {
					if rng.IntN(4) == 0 {
						s[[2]int{x, y}] = true
					}
				}
			}
			h := toHeads(s)
			size := 1 + rng.IntN(ts)
			placed, unplaced := set{}, set{}
			for k := range s {
				if k[0]+size <= ts {
					placed[[2]int{k[0] + size, k[1]}] = true
				}
				if k[1]+size <= ts {
					placed[[2]int{k[0], k[1] + size}] = true
				}
				if k[0] >= size {
					unplaced[[2]int{k[0] - size, k[1]}] = true
				}
				if k[1] >= size {
					unplaced[[2]int{k[0], k[1] - size}] = true
				}
			}
			var got headSet
			if hs.place(&got, &h, size); got != toHeads(placed) {
				t.Fatalf("team size %d: place %d in %v gives %v, want %v", ts, size, s, got, toHeads(placed))
			}
			if hs.unplace(&got, &h, size); got != toHeads(unplaced) {
				t.Fatalf("team size %d: unplace %d from %v gives %v, want %v", ts, size, s, got, toHeads(unplaced))
			}
			union := set{}
			for k := range s {
				union[k] = true
			}
			for k := range placed {
				union[k] = true
			}
			added := h
			if hs.add(&added, size); added != toHeads(union) {
				t.Fatalf("team size %d: add %d to %v", ts, size, s)
			}
			if hs.complete(&h) != s[[2]int{ts, ts}] || hs.empty(&h) != (len(s) == 0) {
				t.Fatalf("team size %d: complete or empty wrong for %v", ts, s)
			}
		}
		if one, target := hs.one(ts), hs.target(); one != toHeads(set{{ts, 0}: true}) || target != toHeads(set{{ts, ts}: true}) {
			t.Fatalf("team size %d: one or target wrong", ts)
		}
	}
}

// A node fills one cache line, as its comment promises the walks.
func TestANodeIsOneCacheLine(t *testing.T) {
	if s := unsafe.Sizeof(node{}); s != 64 {
		t.Fatalf("a node takes %d bytes, want 64", s)
	}
}
