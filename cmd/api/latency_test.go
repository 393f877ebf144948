package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// From the tick that forms a match to the client: the whole program on Postgres, a 1v1 queue
// ticking every 100 ms, pairs of tickets arriving steadily, an SSE client on the queue's
// events and a long-poll on every ticket. Each latency runs from the match's time (the
// tick's now, taken before its pass: the pass, the match write, the notification and the
// delivery are all in it) to the moment the client has read the event, or the long-poll's
// answer. The clock is one: the program runs in the test's process.
//
// The target is a p99 under 50 ms: MATCHMAKER_LATENCY_BOUND=50ms asserts it (the figure in
// docs/performance.md). A shared machine stalls a whole tick now and then, which puts a run's
// p99 far over it while the next run's is well within (docs/performance.md, "Stalls the tests
// allow for"), so without it the test asserts
// what a broken delivery would fail but a busy machine keeps: a median under 100 ms (a waiter
// that misses its notification waits for the next event, or for its poll of 250 ms while the
// listening connection is down).
func TestMatchToEventLatency(t *testing.T) {
	// Not parallel: its load would starve the fault tests' (and theirs its timings).
	quantile, bound := 0.5, 100*time.Millisecond
	if v := os.Getenv("MATCHMAKER_LATENCY_BOUND"); v != "" {
		var err error
		if bound, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
		quantile = 0.99
	}
	duration := 10 * time.Second
	if testing.Short() {
		duration = 3 * time.Second
	}
	p := startProgram(t, map[string]string{"DATABASE_URL": dbtest.URL(t), "MATCHMAKER_AUTH": "off",
		"MATCHMAKER_RATE_LIMITS": "match=off,read=off,admin=off"})
	defer p.stop()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	if status, body := call(t, client, http.MethodPut, p.base+"/v1/queues/duel", "",
		`{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":100}`); status != http.StatusCreated {
		t.Fatalf("put queue: %d %s", status, body)
	}

	type event struct {
		Seq      int64
		Type     string
		TicketID string `json:"ticket_id"`
		At       time.Time
	}
	var mu sync.Mutex
	var sse, polls []time.Duration
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streaming := make(chan struct{})
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/v1/queues/duel/events?after=0", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			close(streaming)
			return
		}
		defer resp.Body.Close()
		close(streaming)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			got := time.Now()
			var e event
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Errorf("event %s: %v", data, err)
				return
			}
			if e.Type == "matched" {
				mu.Lock()
				sse = append(sse, got.Sub(e.At))
				mu.Unlock()
			}
		}
	}()
	<-streaming

	// Every 20 ms two pairs of tickets: within a pair the ratings are equal, between pairs
	// far apart, so each pair is matched at the next tick.
	var polling sync.WaitGroup
	n := 0
	for end := time.Now().Add(duration); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for range 4 {
			body := fmt.Sprintf(`{"players":[{"id":"p%d","rating":%d}]}`, n, 1000+(n/2)*100)
			n++
			status, b := call(t, client, http.MethodPost, p.base+"/v1/queues/duel/tickets", "", body)
			if status != http.StatusCreated {
				t.Fatalf("create: %d %s", status, b)
			}
			var tk struct{ ID string }
			if err := json.Unmarshal(b, &tk); err != nil {
				t.Fatal(err)
			}
			polling.Go(func() {
				status, b, err := send(client, http.MethodGet, p.base+"/v1/tickets/"+tk.ID+"?wait_s=30", "", "")
				got := time.Now()
				var ans struct {
					Status    string
					UpdatedAt time.Time `json:"updated_at"`
				}
				if err != nil || status != http.StatusOK || json.Unmarshal(b, &ans) != nil || ans.Status != "matched" {
					t.Errorf("long-poll of %s: %d %s %v", tk.ID, status, b, err)
					return
				}
				mu.Lock()
				polls = append(polls, got.Sub(ans.UpdatedAt)) // a matched ticket's updated_at is its match's time
				mu.Unlock()
			})
		}
	}
	polling.Wait()
	waitFor(t, "every match's events on the stream", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sse) >= n
	})
	cancel()
	<-streamDone

	mu.Lock()
	defer mu.Unlock()
	for _, c := range []struct {
		name string
		d    []time.Duration
	}{{"SSE event", sse}, {"long-poll answer", polls}} {
		slices.Sort(c.d)
		q := func(p float64) time.Duration {
			return c.d[min(len(c.d)-1, int(p*float64(len(c.d))))].Round(100 * time.Microsecond)
		}
		t.Logf("match -> %s, %d tickets: p50 %v, p90 %v, p99 %v, max %v", c.name, len(c.d), q(0.5), q(0.9), q(0.99), q(1))
		if q(quantile) > bound {
			t.Errorf("match -> %s: the %g quantile is %v, want under %v", c.name, quantile, q(quantile), bound)
		}
	}
}
