package storetest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// testDeleteResult: N results recorded, one deleted; every rating, leaderboard, bot count and
// the bias table then equal those of a fresh reference fed the other N-1 in the same order.
func testDeleteResult(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	all, deleted, ns2next := deletionHistory()
	full, fresh := newRef(), newRef()
	for _, r := range all {
		recordBoth(t, st, full, r)
		if r.MatchID != deleted.MatchID {
			fresh.record(t, r)
		}
	}
	assertRef(t, st, full)

	got, err := st.StoredResult(ctx, deleted.MatchID)
	if err != nil || hashOf(got) != hashOf(deleted) {
		t.Fatalf("StoredResult(%s) = %+v, %v; want the result as recorded", deleted.MatchID, got, err)
	}
	_, err = st.StoredResult(ctx, "no-such-match")
	wantCode(t, err, apperr.NotFound)
	checkRefusedDeletions(t, st, deleted.MatchID)
	assertRef(t, st, full)

	rep, err := st.DeleteResult(ctx, deleted.MatchID, "ns2", replayModel, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Results != 30 || rep.Contexts != 1 {
		t.Fatalf("report %+v, want 30 results replayed into 1 context", rep)
	}
	assertRef(t, st, fresh) // every rating as if the result had never been recorded
	// And as a fresh in-memory store fed the other N-1 has them (the reference, checked above,
	// is the model applied one result at a time; this is the store that does so).
	other := ratings.NewMemoryStore(nil)
	for _, r := range all {
		if r.MatchID != deleted.MatchID {
			if _, err := other.RecordResult(ctx, request(r), applyModel(r)); err != nil {
				t.Fatal(err)
			}
		}
	}
	sameStores(t, st, other, fresh)
	checkDeleted(t, st, deleted.MatchID)

	// The next result sees the same priors and bias table as the reference's.
	recordBoth(t, st, fresh, ns2next)
	// The match id may be recorded again: a corrected result, not a replay nor a conflict.
	corrected := deleted
	w := 1
	corrected.Winner = &w
	recordBoth(t, st, fresh, corrected)
	assertRef(t, st, fresh)
	if rep, err := st.Rebuild(ctx, "ns2", replayModel, nil); err != nil || rep.Results != 32 {
		t.Fatalf("rebuild after the deletion: %+v %v", rep, err)
	}
	assertRef(t, st, fresh)
}

// deletionHistory is testDeleteResult's history: 30 results of ns2 and 4 of tdm, mixed, with
// the one to delete among them, and the next ns2 result. The deleted result is the only one
// of p00..p09 and of the bot Gamma: their ratings go with it.
func deletionHistory() (all []ratings.Result, deleted, next ratings.Result) {
	ns2, tdm := league(31, 5, "ns2"), league(4, 6, "tdm")
	m := fiveVFive("ns2-deleted", 0)
	m.gameType, m.sides, m.mapName = "NS2", [2]string{"marines", "aliens"}, "ns2_tram"
	m.teams[1][4] = "bot:Gamma"
	deleted = m.result()
	for i, r := range ns2[:30] {
		all = append(all, r)
		if i == 12 {
			all = append(all, deleted)
		}
		if i%8 == 0 {
			all = append(all, tdm[i/8])
		}
	}
	return all, deleted, ns2[30]
}

// checkRefusedDeletions: deletions refused, changing nothing: another game type's match id, an
// unknown one, and a replay that fails.
func checkRefusedDeletions(t *testing.T, st ratings.Store, matchID string) {
	t.Helper()
	ctx := context.Background()
	_, err := st.DeleteResult(ctx, matchID, "tdm", replayModel, nil)
	wantCode(t, err, apperr.NotFound)
	_, err = st.DeleteResult(ctx, "no-such-match", "ns2", replayModel, nil)
	wantCode(t, err, apperr.NotFound)
	boom := errors.New("the replay failed")
	_, err = st.DeleteResult(ctx, matchID, "ns2", func(*ratings.MutatorPolicy, map[string]*ratings.State, iter.Seq[ratings.Result]) (map[string]*ratings.State, error) {
		return nil, boom
	}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("DeleteResult with a failing replay: %v, want %v", err, boom)
	}
	if _, err := st.StoredResult(ctx, matchID); err != nil {
		t.Fatalf("after a failed deletion the result is still stored: %v", err)
	}
}

// checkDeleted: the deleted result is gone from the store, its deletion cannot be repeated,
// and the ns2 history holds the other 30.
func checkDeleted(t *testing.T, st ratings.Store, matchID string) {
	t.Helper()
	ctx := context.Background()
	_, err := st.StoredResult(ctx, matchID)
	wantCode(t, err, apperr.NotFound)
	_, err = st.DeleteResult(ctx, matchID, "ns2", replayModel, nil)
	wantCode(t, err, apperr.NotFound)
	n := 0
	if err := st.History(ctx, "ns2", func(r ratings.Result) error {
		if r.MatchID == matchID {
			t.Errorf("the deleted result is still in the history")
		}
		n++
		return nil
	}); err != nil || n != 30 {
		t.Fatalf("history: %d results (%v), want 30", n, err)
	}
}

// testConcurrentDelete: results keep coming while a result is deleted. Each writer has a side
// pair of its own, so no two concurrent results share a bias cell (a lag the Postgres store
// allows between concurrent results, see ratingsdb.Store.RecordResult), and results that
// share a player are serialized: the ratings left must then be exactly those of the stored
// history (which no longer holds the deleted result) replayed in the order it was accepted.
func testConcurrentDelete(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(19, 19))
	const writers, each = 4, 30
	game := func(part, i int) ratings.Result {
		var m match
		m.id = fmt.Sprintf("cd-%d-%03d", part, i)
		m.sides = [2]string{fmt.Sprintf("red%d", part), fmt.Sprintf("blue%d", part)}
		m.mapName = []string{"a", "b"}[i%2]
		for j, k := range rng.Perm(16)[:8] {
			m.teams[j/4] = append(m.teams[j/4], fmt.Sprintf("p%02d", k))
		}
		m.winner = rng.IntN(3) - 1
		return m.result()
	}
	parts := make([][]ratings.Result, writers+1)
	for p := range parts {
		for i := range each {
			parts[p] = append(parts[p], game(p, i))
		}
	}
	for _, r := range parts[0] { // recorded before: one of them is deleted
		if _, err := st.RecordResult(ctx, request(r), applyModel(r)); err != nil {
			t.Fatal(err)
		}
	}
	victims := []string{parts[0][3].MatchID, parts[0][17].MatchID}

	var wg sync.WaitGroup
	errs := make(chan error, writers*each+len(victims))
	for _, part := range parts[1:] {
		wg.Go(func() {
			for _, r := range part {
				if _, err := st.RecordResult(ctx, request(r), applyModel(r)); err != nil {
					errs <- fmt.Errorf("%s: %w", r.MatchID, err)
				}
			}
		})
	}
	wg.Go(func() {
		for _, id := range victims {
			if _, err := st.DeleteResult(ctx, id, "tdm", replayModel, nil); err != nil {
				errs <- fmt.Errorf("delete %s: %w", id, err)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	f := newRef()
	n := 0
	if err := st.History(ctx, "tdm", func(r ratings.Result) error {
		for _, id := range victims {
			if r.MatchID == id {
				t.Errorf("deleted %s is still in the history", id)
			}
		}
		f.record(t, r)
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := (writers+1)*each - len(victims); n != want {
		t.Fatalf("history: %d results, want %d", n, want)
	}
	assertRef(t, st, f)
}

// sameStores checks that st holds, for every participant of every context of the reference f,
// the rating other holds, to rounding.
func sameStores(t *testing.T, st, other ratings.Store, f *ref) {
	t.Helper()
	ctx := context.Background()
	for key, s := range f.states {
		c, err := ratings.ParseContextKey(key)
		if err != nil {
			t.Fatal(err)
		}
		ps := s.Participants()
		got, err := st.Ratings(ctx, c, ps)
		if err != nil {
			t.Fatal(err)
		}
		want, err := other.Ratings(ctx, c, ps)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d ratings, the fresh store has %d", key, len(got), len(want))
		}
		for _, p := range ps {
			if !sameRating(got[p], want[p]) {
				t.Fatalf("%s %v: %+v, the fresh store %+v", key, p, got[p], want[p])
			}
		}
	}
}
