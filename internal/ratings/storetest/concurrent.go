package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// concurrentLeague is 200 results over 20 players (5v5), in 8 slices for 8 goroutines.
func concurrentLeague() ([][]ratings.Result, map[string]int) {
	rng := rand.New(rand.NewPCG(42, 42))
	games := map[string]int{}
	parts := make([][]ratings.Result, 8)
	for i := range 200 {
		perm := rng.Perm(20)
		var m match
		m.id = fmt.Sprintf("conc-%03d", i)
		for j, k := range perm[:10] {
			name := fmt.Sprintf("p%02d", k)
			m.teams[j/5] = append(m.teams[j/5], name)
			games[name]++
		}
		m.winner = rng.IntN(3) - 1
		m.mapName = []string{"a", "b"}[i%2]
		parts[i%8] = append(parts[i%8], m.result())
	}
	return parts, games
}

func testConcurrentResults(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	parts, games := concurrentLeague()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for _, part := range parts {
		wg.Go(func() {
			for _, r := range part {
				if _, err := st.RecordResult(ctx, request(r), applyModel(r)); err != nil {
					errs <- fmt.Errorf("%s: %w", r.MatchID, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err) // a deadlock or a serialization failure the store did not retry
	}
	checkGames(t, st, games, 2000)
	rep, err := st.Rebuild(ctx, "tdm", replayModel, nil)
	if err != nil || rep.Results != 200 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	checkGames(t, st, games, 2000)
}

func checkGames(t *testing.T, st ratings.Store, games map[string]int, total int) {
	t.Helper()
	var ps []ratings.Participant
	for name := range games {
		ps = append(ps, ratings.Participant{ID: name})
	}
	got, err := st.Ratings(context.Background(), mustContext(t, "tdm"), ps)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for name, n := range games {
		g := got[ratings.Participant{ID: name}].Games
		sum += g
		if g != n {
			t.Errorf("%s: %d games, want %d (a lost update)", name, g, n)
		}
	}
	if sum != total {
		t.Fatalf("%d games in all, want %d", sum, total)
	}
}

func testConcurrentReplays(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	r := fiveVFive("same-id", 0).result()
	const n = 8
	out := make([]ratings.Recorded, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = st.RecordResult(ctx, request(r), applyModel(r)) })
	}
	wg.Wait()
	first := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if !out[i].Replayed {
			first++
		}
		if string(out[i].Response) != string(out[0].Response) {
			t.Fatalf("call %d answered differently", i)
		}
	}
	if first != 1 {
		t.Fatalf("%d calls recorded the result, want exactly 1", first)
	}
	f := newRef()
	f.record(t, r)
	assertRef(t, st, f)
}

func testConcurrentConflicts(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	bodies := [2]ratings.Result{fiveVFive("contested", 0).result(), fiveVFive("contested", 5).result()}
	const n = 8
	out := make([]ratings.Recorded, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { r := bodies[i%2]; out[i], errs[i] = st.RecordResult(ctx, request(r), applyModel(r)) })
	}
	wg.Wait()
	winner := -1
	for i := range n {
		if errs[i] == nil && !out[i].Replayed {
			if winner >= 0 {
				t.Fatalf("calls %d and %d both recorded the match", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no call recorded the match")
	}
	for i := range n {
		switch {
		case i%2 == winner%2:
			if errs[i] != nil {
				t.Fatalf("call %d with the winner's body: %v", i, errs[i])
			}
		default:
			wantCode(t, errs[i], apperr.Conflict)
		}
	}
	f := newRef()
	f.record(t, bodies[winner%2])
	assertRef(t, st, f)
}

func testConcurrentRebuild(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	parts, _ := concurrentLeague()
	var wg sync.WaitGroup
	errs := make(chan error, 250)
	for _, part := range parts[:4] {
		wg.Go(func() {
			for _, r := range part {
				if _, err := st.RecordResult(ctx, request(r), applyModel(r)); err != nil {
					errs <- fmt.Errorf("%s: %w", r.MatchID, err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if _, err := st.Rebuild(ctx, "tdm", replayModel, nil); err != nil {
				errs <- fmt.Errorf("rebuild: %w", err)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want, total := map[string]int{}, 0
	for _, part := range parts[:4] {
		for _, r := range part {
			for _, team := range r.Teams {
				for _, p := range team.Players {
					want[p.ID]++
					total++
				}
			}
		}
	}
	checkGames(t, st, want, total)
	rep, err := st.Rebuild(ctx, "tdm", replayModel, nil)
	if err != nil || rep.Results != 100 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	checkGames(t, st, want, total)
}
