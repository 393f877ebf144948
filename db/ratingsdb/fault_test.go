package ratingsdb_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/pgfault"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// faultStore is a store with the given call deadline on a private server the test may freeze.
func faultStore(t *testing.T, timeout time.Duration) (*ratingsdb.Store, *pgfault.Server) {
	t.Helper()
	srv := pgfault.Start(t)
	ctx := context.Background()
	if err := db.Migrate(ctx, srv.URL()); err != nil {
		t.Fatal(err)
	}
	s, err := ratingsdb.Open(ctx, srv.URL(), db.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Thaw()
		s.Close()
	})
	return s, srv
}

// storeCalls are one call of each kind; each returns its error.
func storeCalls(s *ratingsdb.Store) map[string]func(ctx context.Context, n int) error {
	c := ratings.Context{GameType: "tdm"}
	return map[string]func(ctx context.Context, n int) error{
		"RecordResult": func(ctx context.Context, n int) error {
			r := fiveVFive(fmt.Sprintf("m-%d", n), fmt.Sprintf("p%d-", n))
			_, err := s.RecordResult(ctx, request(r), apply(r, []byte("{}")))
			return err
		},
		"Ratings": func(ctx context.Context, n int) error {
			_, err := s.Ratings(ctx, c, []ratings.Participant{{ID: "p0-1"}})
			return err
		},
		"Leaderboard": func(ctx context.Context, n int) error {
			_, err := s.Leaderboard(ctx, c, 10, ratings.Ranking{})
			return err
		},
		"Policy": func(ctx context.Context, n int) error {
			_, err := s.Policy(ctx)
			return err
		},
		"Ping": func(ctx context.Context, n int) error { return s.Ping(ctx) },
	}
}

// TestFaultCallsOnAFrozenDatabaseEndAtTheDeadline: with the server frozen, every call, those that
// already hold a connection and those that wait for one (more calls than the pool has
// connections), fails with Unavailable at the store's deadline; once it thaws, calls succeed
// again on the same store. Each call is bounded by a control timer of the deadline started
// with it, plus 100 ms: on a loaded host the deadline fires as late as the control, while a
// call that waited out a second deadline (for a connection, then for its answer) would take
// twice the timeout.
func TestFaultCallsOnAFrozenDatabaseEndAtTheDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	s, srv := faultStore(t, timeout)
	calls := storeCalls(s)
	ctx := context.Background()
	for name, call := range calls {
		if err := call(ctx, 0); err != nil {
			t.Fatalf("%s before the fault: %v", name, err)
		}
	}

	srv.Freeze()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slow []string
	for i := range 12 { // 60 calls: more than the pool has connections
		for name, call := range calls {
			wg.Go(func() {
				start, control := time.Now(), dbtest.Control(timeout)
				err := call(ctx, i+1)
				took := time.Since(start)
				fired := control()
				mu.Lock()
				defer mu.Unlock()
				if apperr.CodeOf(err) != apperr.Unavailable {
					slow = append(slow, fmt.Sprintf("%s: %v, want Unavailable", name, err))
				}
				if took > fired+100*time.Millisecond {
					slow = append(slow, fmt.Sprintf("%s took %v (the control timer of %v fired after %v)", name, took, timeout, fired))
				}
			})
		}
	}
	wg.Wait()
	for _, s := range slow {
		t.Error(s)
	}

	srv.Thaw()
	deadline := time.Now().Add(10 * time.Second)
	for name, call := range calls {
		for {
			err := call(ctx, 1000)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still fails 10 s after the thaw: %v", name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestFaultDeadlineMessage: the error of a call that ran out of time says so, for the problem
// document's detail.
func TestFaultDeadlineMessage(t *testing.T) {
	t.Parallel()
	s, srv := faultStore(t, 200*time.Millisecond)
	srv.Freeze()
	err := s.Ping(context.Background())
	if apperr.CodeOf(err) != apperr.Unavailable || !strings.Contains(err.Error(), "did not answer within 200ms") {
		t.Fatalf("Ping on a frozen server: %v", err)
	}
}

// TestFaultShutdownStopsWaitingAtItsDeadline: calls stuck on a frozen server (with a deadline far
// away) keep pgxpool's Close waiting; Shutdown returns at its own deadline, says what it
// abandoned, and the stuck calls end at once with Unavailable.
func TestFaultShutdownStopsWaitingAtItsDeadline(t *testing.T) {
	t.Parallel()
	s, srv := faultStore(t, time.Minute)
	calls := storeCalls(s)
	ctx := context.Background()
	if err := calls["Ratings"](ctx, 0); err != nil {
		t.Fatal(err)
	}
	srv.Freeze()
	errs := make(chan error, 8)
	for i := range cap(errs) {
		go func() { errs <- calls["RecordResult"](ctx, i) }()
	}
	time.Sleep(200 * time.Millisecond) // let them reach the server

	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Shutdown(sctx)
	took := time.Since(start)
	if took > 800*time.Millisecond {
		t.Errorf("Shutdown took %v with a deadline of 500ms", took)
	}
	if err == nil || !strings.Contains(err.Error(), "record result") {
		t.Errorf("Shutdown error = %v, want one naming the abandoned record result calls", err)
	}
	for range cap(errs) {
		select {
		case err := <-errs:
			if apperr.CodeOf(err) != apperr.Unavailable {
				t.Errorf("an abandoned call: %v, want Unavailable", err)
			}
		case <-time.After(time.Second):
			t.Fatal("a call was still stuck a second after Shutdown returned")
		}
	}
	if err := s.Ping(ctx); apperr.CodeOf(err) != apperr.Unavailable {
		t.Errorf("Ping after Shutdown: %v, want Unavailable", err)
	}
}

// TestFaultShutdownAfterAFreezeDoesNotWaitForTheGoodbyes: calls that ran out of time on a frozen
// server leave pgx sending a cancel request and a Terminate to it, for up to 15 s each, and
// pgxpool's Close waits for them; the store bounds those waits, so a shutdown with nothing in
// flight is quick even while the server stays frozen.
func TestFaultShutdownAfterAFreezeDoesNotWaitForTheGoodbyes(t *testing.T) {
	t.Parallel()
	s, srv := faultStore(t, 300*time.Millisecond)
	calls := storeCalls(s)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { _ = calls["Ratings"](ctx, i) }) // open a few connections
	}
	wg.Wait()
	srv.Freeze()
	for i := range 8 {
		wg.Go(func() { _ = calls["Ratings"](ctx, i) })
	}
	wg.Wait()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Shutdown with nothing in flight took %v on a frozen server", took)
	}
}
