// Package scratch is the passes' way with arrays they keep from one pass to the next (the
// queue service runs a pass of the same queue every tick): a buffer resized or emptied in
// place when its array is large enough, and slices cut from shared arrays.
package scratch

// Resize returns s with length n, reusing its array when it is large enough (the caller
// overwrites every element).
func Resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/8)
	}
	return s[:n]
}

// Reuse is buf with length 0 and room for n, its array when it is large enough.
func Reuse[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, 0, n)
	}
	return buf[:0]
}

// Span is s[from:from+n], its capacity cut at its end so that no append reaches the next.
func Span[T any](s []T, from, n int32) []T { return s[from : from+n : from+n] }

// Arena hands out slices cut from shared arrays, each capped at its length so that no
// append reaches the next: a pass makes a match per ten players or so, each of a few
// slices.
type Arena[T any] struct{ buf []T }

const arenaChunk = 4096

// Take returns a new slice of length n.
func (a *Arena[T]) Take(n int) []T {
	if n > len(a.buf) {
		a.buf = make([]T, max(n, arenaChunk))
	}
	out := a.buf[:n:n]
	a.buf = a.buf[n:]
	return out
}
