package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// flood is -flood N: one API key of its own (scope match) opens N event streams at once to
// replica 0 before the arrivals and holds those it gets until the run ends, reading them, as
// a misbehaving backend would. The replica must answer past its per-key cap
// (MATCHMAKER_MAX_WAITERS_PER_KEY) with 429, and its RSS stay within its memory budget,
// while the other keys' tickets go on as usual.
type flood struct {
	key     string
	streams int

	mu         sync.Mutex
	opened     int
	statuses   map[string]int // answers other than 200, and transport failures
	retryAfter map[string]int // the Retry-After of the 429s
	openedIn   time.Duration  // until every stream had its answer
	before     replicaSample  // the replica before the flood, and once every stream had its answer
	after      replicaSample
}

// floodSummary is what -flood saw.
type floodSummary struct {
	Streams    int            `json:"streams"`
	Replica    int            `json:"replica"`
	Opened     int            `json:"opened"` // answered 200 and held open
	Statuses   map[string]int `json:"statuses,omitempty"`
	RetryAfter map[string]int `json:"retry_after,omitempty"`
	OpenedInS  float64        `json:"opened_in_s"`
	// The replica before the flood and once every stream had its answer (its peak over the
	// run is the replica's).
	RSSBeforeMiB    float64 `json:"rss_before_mib"`
	RSSAfterMiB     float64 `json:"rss_after_mib"`
	GoroutinesAfter int64   `json:"goroutines_after"`
}

// start opens the streams, all at once, and returns when each has its answer (or after 60 s);
// the open ones are read until ctx ends.
func (f *flood) start(ctx context.Context, l *load, r *replica) {
	f.statuses, f.retryAfter = map[string]int{}, map[string]int{}
	f.before = r.sample()
	begin := time.Now()
	var answered sync.WaitGroup
	answered.Add(f.streams)
	for range f.streams {
		go f.stream(ctx, l, r, answered.Done)
	}
	done := make(chan struct{})
	go func() { answered.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
	case <-ctx.Done():
	}
	f.mu.Lock()
	f.openedIn = time.Since(begin)
	f.mu.Unlock()
	f.after = r.sample()
}

func (f *flood) stream(ctx context.Context, l *load, r *replica, answered func()) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/v1/queues/"+l.queue+"/events", nil)
	if err != nil {
		answered()
		return
	}
	req.Header.Set("Authorization", "Bearer "+f.key)
	resp, err := l.client.Do(req)
	f.mu.Lock()
	switch {
	case err != nil:
		f.statuses["transport"]++
	case resp.StatusCode == http.StatusOK:
		f.opened++
	default:
		f.statuses[strconv.Itoa(resp.StatusCode)]++
		if resp.StatusCode == http.StatusTooManyRequests {
			f.retryAfter[resp.Header.Get("Retry-After")]++
		}
	}
	f.mu.Unlock()
	answered()
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body) // until the run's end cancels ctx
	}
}

func (f *flood) summary(replica int) *floodSummary {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &floodSummary{Streams: f.streams, Replica: replica, Opened: f.opened, Statuses: f.statuses,
		RetryAfter: f.retryAfter, OpenedInS: f.openedIn.Seconds(),
		RSSBeforeMiB: float64(f.before.RSSKiB) / 1024, RSSAfterMiB: float64(f.after.RSSKiB) / 1024, GoroutinesAfter: f.after.Goroutines}
}

func (s *floodSummary) String() string {
	return fmt.Sprintf("%d streams from one key to replica %d: %d opened and held; %s (Retry-After %s); all answered in %.1f s; "+
		"the replica's RSS %.0f -> %.0f MiB, %d goroutines",
		s.Streams, s.Replica, s.Opened, countsString(s.Statuses), countsString(s.RetryAfter), s.OpenedInS,
		s.RSSBeforeMiB, s.RSSAfterMiB, s.GoroutinesAfter)
}
