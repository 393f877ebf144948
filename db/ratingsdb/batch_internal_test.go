package ratingsdb

import (
	"fmt"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// TestRowClaims: a batch's claims are in increasing order without repeats (one order for
// every batch), one a row up to maxRowClaims rows (none shared by these), and past it at most maxRowClaims
// buckets.
func TestRowClaims(t *testing.T) {
	rows := func(n int) []rowKey {
		var out []rowKey
		for i := range n {
			out = append(out, rowKey{"tdm", ratings.Participant{ID: fmt.Sprintf("p%d", i)}}, rowKey{"tdm", ratings.Participant{ID: fmt.Sprintf("p%d", i)}})
		}
		return out
	}
	for _, c := range []struct {
		rows, keys int
		class      int32
	}{{1, 1, claimClass}, {maxRowClaims, maxRowClaims, claimClass}, {maxRowClaims + 1, maxRowClaims, bucketClass}, {5000, maxRowClaims, bucketClass}} {
		class, keys := rowClaims(rows(c.rows))
		if class != c.class || len(keys) > c.keys || class == claimClass && len(keys) != c.rows {
			t.Errorf("%d rows: class %d, %d keys, want class %d, %d keys", c.rows, class, len(keys), c.class, c.keys)
		}
		if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
			t.Errorf("%d rows: keys not in order or repeated: %v", c.rows, keys)
		}
	}
	bot := rowKey{"tdm", ratings.Participant{ID: "x", Bot: true}}
	if bot.claim() == (rowKey{"tdm", ratings.Participant{ID: "x"}}).claim() {
		t.Error("a bot and a player of the same id share a claim")
	}
}
