package queuestats

import "slices"

// sortedWaits keeps the waits of the stats window in order, so that a snapshot's quantiles
// cost one merge of the waits that came and went since the last snapshot, not a sort of the
// whole window: at 300 matched tickets a second the window holds 180,000 waits, and sorting
// them every StatsRefresh on the tick's goroutine took longer than a tick.
type sortedWaits struct {
	sorted  []float64
	spare   []float64 // the other buffer of the merge
	added   []float64 // since the last merge
	removed []float64 // since the last merge; each one of sorted or added
}

func (w *sortedWaits) add(x float64)    { w.added = append(w.added, x) }
func (w *sortedWaits) remove(x float64) { w.removed = append(w.removed, x) }

// values brings the order up to date and returns it, valid until the next add, remove or
// values.
func (w *sortedWaits) values() []float64 {
	if len(w.added) == 0 && len(w.removed) == 0 {
		return w.sorted
	}
	slices.Sort(w.added)
	slices.Sort(w.removed)
	out := w.spare[:0]
	i, j, r := 0, 0, 0 // into sorted, added and removed
	for i < len(w.sorted) || j < len(w.added) {
		var x float64
		if j == len(w.added) || (i < len(w.sorted) && w.sorted[i] <= w.added[j]) {
			x, i = w.sorted[i], i+1
		} else {
			x, j = w.added[j], j+1
		}
		if r < len(w.removed) && w.removed[r] == x {
			r++
			continue
		}
		out = append(out, x)
	}
	w.sorted, w.spare = out, w.sorted
	w.added, w.removed = w.added[:0], w.removed[:0]
	return w.sorted
}
