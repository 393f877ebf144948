package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// load is the game backends: it sends the arrivals, waits for their matches, posts the
// results, and counts what it sees.
type load struct {
	c       config
	reps    []*replica
	key     string   // every scope: the queue, the matches' reads
	keys    []string // the tickets' keys, one per game backend (-keys)
	db      *database
	queue   string
	queue2  string // -queues 2: the second queue, every player searching both (exclusive.go)
	runID   string
	client  *http.Client
	backend []*backend // -wait sse -backends N: the shared streams
	flood   *flood     // -flood N

	started     time.Time
	due         atomic.Int64 // arrivals due
	notSent     atomic.Int64 // not sent: -max-waiters reached
	abandoned   atomic.Int64 // sse: the ticket's stream could not be opened, so it was not created
	created     atomic.Int64
	active      atomic.Int64 // tickets being created or waiting
	waiting     atomic.Int64 // tickets created and waiting for their end
	peakWaiting atomic.Int64
	ended       atomic.Int64 // tickets whose end a client saw
	posted      atomic.Int64 // results answered 201 (or 200: replayed)
	errCount    atomic.Int64
	err5xx      atomic.Int64

	tickets   sync.WaitGroup
	results   sync.WaitGroup
	resultSem chan struct{}

	mu        sync.Mutex
	requests  map[string]int64            // by endpoint
	errs      map[string]map[string]int64 // by endpoint, then status ("503", "timeout", "transport")
	cut       map[string]int64            // requests the run's end cut off, by endpoint: not errors
	details   map[string][]string         // by "endpoint status": the first distinct problem details
	createLat []time.Duration             // answered 201, from when each was due
	outcomes  []outcome
	failed    []failedCreate
	matches   map[string]*matchInfo

	sampler *sampler
	workers *workers       // the tickets' and the results' goroutines
	parts   partitionState // -partitions
}

// outcome is a ticket's end, as its client saw it.
type outcome struct {
	status  string // matched, expired or cancelled
	matchID string
	at      time.Time // the ticket's updated_at (long-poll) or the event's at (SSE): the match's creation
	seen    time.Time // when the client saw it
	via     int       // 1 + the index of the replica whose shared stream (-backends) brought it; 0 otherwise
}

// matchInfo is a match some client saw; the first to see it posts its result.
type matchInfo struct {
	createdAt time.Time // from GET /v1/matches/{id}; zero if it could not be read
	result    string    // posted, failed, not posted
}

// failedCreate is a creation answered an error (or none): its first player, to look the
// ticket up in the database at the end.
type failedCreate struct {
	player string
	status string
}

func newLoad(c config, reps []*replica, key string, keys []string, db *database) *load {
	conns := c.maxWaiters + 1000
	return &load{c: c, reps: reps, key: key, keys: keys, db: db,
		queue: "soak-" + randomHex(4), runID: randomHex(3),
		client: &http.Client{Transport: &http.Transport{
			MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: 90 * time.Second,
			DisableCompression: true,
		}},
		resultSem: make(chan struct{}, 64),
		requests:  map[string]int64{}, errs: map[string]map[string]int64{}, cut: map[string]int64{}, details: map[string][]string{},
		matches: map[string]*matchInfo{}, workers: newWorkers(), parts: partitionState{arrivals: make(chan struct{})},
	}
}

func (l *load) waitMode() string {
	switch {
	case l.c.wait == "longpoll":
		return fmt.Sprintf("longpoll (wait_s=%d, each ticket its own long-poll)", l.c.waitS)
	case l.c.backends > 0:
		return fmt.Sprintf("sse (%d shared streams, one per game backend)", l.c.backends)
	case l.c.ticketOnly:
		return "sse (a stream per ticket, of its events alone: ?ticket=)"
	default:
		return "sse (a stream per ticket, filtered by its id)"
	}
}

// pick is a live replica, at random (-kill-after's victim is dead once killed).
func (l *load) pick() *replica {
	for {
		i := rand.IntN(len(l.reps))
		if l.parts.dead.Load()&(1<<i) == 0 {
			return l.reps[i]
		}
	}
}

// ticketKey is the API key of arrival n: its backend's with -backends, else key n mod -keys.
func (l *load) ticketKey(n int64) string {
	if l.c.backends > 0 {
		return l.keys[int(n%int64(l.c.backends))%len(l.keys)]
	}
	return l.keys[n%int64(len(l.keys))]
}

// do sends one request and reads its answer, counting it under endpoint. An error is a
// transport failure (counted as "timeout" or "transport", or as cut when ctx ended).
func (l *load) do(ctx context.Context, key, endpoint, method, url string, body []byte, timeout time.Duration) (int, []byte, http.Header, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, method, url, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := l.client.Do(req)
	var b []byte
	if err == nil {
		b, err = readBody(resp)
	}
	if err != nil {
		l.countFailure(ctx, rctx, endpoint, err)
		return 0, nil, nil, err
	}
	l.count(endpoint, resp.StatusCode)
	if resp.StatusCode >= 300 {
		l.keepDetail(endpoint, resp.StatusCode, b)
	}
	return resp.StatusCode, b, resp.Header, nil
}

// readBody reads and closes an answer's body, in one allocation when its length is known.
func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	if n := resp.ContentLength; n >= 0 && n <= 1<<20 {
		b := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(resp.Body)
}

func (l *load) count(endpoint string, status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests[endpoint]++
	if status >= 200 && status < 300 {
		return
	}
	l.errorLocked(endpoint, strconv.Itoa(status))
	if status >= 500 {
		l.err5xx.Add(1)
	}
}

// countFailure counts a request that got no answer: cut off by the run's end, or an error.
func (l *load) countFailure(ctx, rctx context.Context, endpoint string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests[endpoint]++
	switch {
	case ctx.Err() != nil:
		l.cut[endpoint]++
	case rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		l.errorLocked(endpoint, "timeout")
	default:
		l.errorLocked(endpoint, "transport")
	}
}

// keepDetail keeps the first three distinct problem details (or bodies) of each endpoint and
// status, for the summary.
func (l *load) keepDetail(endpoint string, status int, body []byte) {
	k := endpoint + " " + strconv.Itoa(status)
	l.mu.Lock()
	full := len(l.details[k]) >= 3
	l.mu.Unlock()
	if full { // a service refusing thousands a second: decode none of the rest
		return
	}
	var p struct{ Detail string }
	detail := string(body)
	if json.Unmarshal(body, &p) == nil && p.Detail != "" {
		detail = p.Detail
	}
	if len(detail) > 200 {
		detail = detail[:200] + "..."
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.details[k]) < 3 && !slices.Contains(l.details[k], detail) {
		l.details[k] = append(l.details[k], detail)
	}
}

// countBreak counts a stream that broke while it was read: "eof" when the service ended it,
// else "broken" (the connection failed, or stayed silent past the keep-alives).
func (l *load) countBreak(err error) {
	status := "broken"
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		status = "eof"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errorLocked("sse read", status)
}

func (l *load) errorLocked(endpoint, status string) {
	m := l.errs[endpoint]
	if m == nil {
		m = map[string]int64{}
		l.errs[endpoint] = m
	}
	m[status]++
	l.errCount.Add(1)
}

// defineQueue makes the run's queue (-team-size, 5v5 by default; -interval: DESIGN's
// expansions by default) through the first replica.
func (l *load) defineQueue(ctx context.Context) error {
	body := fmt.Sprintf(`{"context":{"game_type":"soak"},"team_size":%d,"expansions":{"interval":%s},"ticket_ttl_s":300,"tick_ms":%d%s}`,
		l.c.teamSize, l.c.interval, l.c.tickMS, l.c.partitionDef())
	st, b, _, err := l.do(ctx, l.key, "queue", http.MethodPut, l.reps[0].base+"/v1/queues/"+l.queue, []byte(body), l.c.timeout)
	if err != nil {
		return fmt.Errorf("PUT /v1/queues/%s: %w", l.queue, err)
	}
	if st != http.StatusCreated && st != http.StatusOK {
		return fmt.Errorf("PUT /v1/queues/%s: %d %s", l.queue, st, b)
	}
	// Every replica reads the definitions every second or so; one of them leads the queue.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range l.reps {
			if l.c.partitions > 0 || r.sampleQueue(l.queue).Leader { // partitions: watchPartitions waits
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("no replica leads queue %s 20 s after its definition", l.queue)
}

// deleteQueue removes the queue (its searching tickets become cancelled).
func (l *load) deleteQueue(logf func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if l.queue2 != "" {
		l.deleteNamed(ctx, l.queue2)
	}
	for _, r := range l.reps {
		st, b, _, err := l.do(ctx, l.key, "queue", http.MethodDelete, r.base+"/v1/queues/"+l.queue, nil, 10*time.Second)
		if err == nil && (st == http.StatusNoContent || st == http.StatusOK || st == http.StatusNotFound) {
			return
		}
		logf("DELETE /v1/queues/%s on replica %d: %d %s %v", l.queue, r.index, st, b, err)
	}
}

// ticketBody is arrival n's ticket: new players (a player searches in one ticket at a time),
// a party of 2-5 with probability -parties, ratings normal around 1000 (sd -rating-sd; a
// party's players a quarter of it around the party's level). It returns the first player's
// id too.
func (l *load) ticketBody(n int64) ([]byte, string) {
	rng := rand.New(rand.NewPCG(l.c.seed, uint64(n)))
	size := 1
	if rng.Float64() < l.c.parties {
		size = 2 + rng.IntN(min(5, l.c.teamSize)-1)
	}
	level := 1000 + l.c.ratingSD*rng.NormFloat64()
	// Appended, not printed: the ids and modes are plain ASCII, so a quote is all they need.
	b := make([]byte, 0, 64+48*size)
	b = append(b, `{"players":[`...)
	first := ""
	for k := range size {
		if k > 0 {
			b = append(b, ',')
		}
		r := level
		if size > 1 {
			r += l.c.ratingSD / 4 * rng.NormFloat64()
		}
		start := len(b) + len(`{"id":"`)
		b = append(b, `{"id":"s`...)
		b = append(b, l.runID...)
		b = append(b, '-')
		b = strconv.AppendInt(b, n, 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(k), 10)
		if k == 0 {
			first = string(b[start:])
		}
		b = append(b, `","rating":`...)
		b = strconv.AppendFloat(b, r, 'f', 1, 64)
		b = append(b, '}')
	}
	b = append(b, ']')
	if l.c.partitions > 0 {
		b = append(b, `,"attributes":{"mode":"`...)
		b = append(b, modeOf(n, l.c.partitions)...)
		b = append(b, `"}`...)
	}
	return append(b, '}'), first
}

// run sends the arrivals for the duration, lets the waits drain, and returns the summary of
// what the clients saw (the database's checks and the replicas' are added by the caller).
func (l *load) run(ctx context.Context, logf func(string, ...any), progress io.Writer) summary {
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	resultsCtx, stopResults := context.WithCancel(context.WithoutCancel(ctx))
	defer stopResults()
	context.AfterFunc(ctx, stopResults) // Ctrl-C stops the results too

	sum := summary{LoadAvgStart: loadAvg()}
	l.sampler = newSampler(l, progress)
	if l.c.wait == "sse" && l.c.backends > 0 {
		if err := l.startBackends(loadCtx); err != nil {
			logf("%v", err)
			sum.Notes = append(sum.Notes, err.Error())
			return l.summarize(sum, 0)
		}
	}
	if l.flood != nil {
		logf("flood: %d event streams from one key to replica 0", l.flood.streams)
		l.flood.start(loadCtx, l, l.reps[0])
		sum.Flood = l.flood.summary(0)
		logf("flood: %s", sum.Flood)
	}
	l.started = time.Now()
	close(l.parts.arrivals) // watchPartitions reads started after this
	l.sampler.take("start")
	stopSampling := l.sampler.every(l.c.every)

	stopProfile, err := startCPUProfile(l.c.cpuProfile)
	if err != nil {
		logf("%v", err)
		sum.Notes = append(sum.Notes, err.Error())
	}
	l.arrive(ctx, loadCtx, resultsCtx)
	stopProfile(logf)
	arrivalsEnd := time.Now()
	l.sampler.take("arrivals end")
	logf("arrivals done after %v; draining (at most %v)", arrivalsEnd.Sub(l.started).Round(time.Millisecond), l.c.drain)
	drainEnd := time.Now().Add(l.c.drain)
	for l.active.Load() > 0 && time.Now().Before(drainEnd) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	stopLoad()
	l.tickets.Wait()
	// Results of matches seen up to here still go out, within a bound.
	done := make(chan struct{})
	go func() { l.results.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3*l.c.timeout + 5*time.Second):
		logf("results still in flight %v after the end: abandoned", 3*l.c.timeout+5*time.Second)
		stopResults()
		<-done
	}
	l.workers.stop()
	stopSampling()
	l.sampler.take("end")
	return l.summarize(sum, arrivalsEnd.Sub(l.started))
}

// arrive sends the arrivals for the duration, each ticket on its own goroutine.
func (l *load) arrive(ctx, loadCtx, resultsCtx context.Context) {
	// Open loop: arrival n is due at n/rate seconds, whatever the answers; each goes on its
	// own, and its creation's latency counts from when it was due.
	end := l.started.Add(l.c.duration)
	timer := time.NewTimer(time.Hour) // one for all the waits (Reset: since Go 1.23 nothing stale is left in C)
	defer timer.Stop()
	var n int64
	for {
		due := l.started.Add(time.Duration(float64(n) / l.c.rate * float64(time.Second)))
		if !due.Before(end) {
			break
		}
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		l.due.Add(1)
		if l.active.Load() >= int64(l.c.maxWaiters) {
			l.notSent.Add(1)
		} else {
			l.active.Add(1)
			l.tickets.Add(1)
			n := n
			l.workers.goRun(func() { l.ticket(loadCtx, resultsCtx, n, due) })
		}
		n++
	}
}

// ticket is one arrival: its creation and its wait, as -wait says.
func (l *load) ticket(ctx, resultsCtx context.Context, n int64, due time.Time) {
	defer l.tickets.Done()
	defer l.active.Add(-1)
	body, first := l.ticketBody(n)
	key := l.ticketKey(n)
	switch {
	case l.queue2 != "":
		l.ticketInBoth(ctx, resultsCtx, key, body, first, due)
	case l.c.wait == "longpoll":
		id := l.create(ctx, key, body, first, due)
		if id != "" {
			l.startWaiting()
			defer l.waiting.Add(-1)
			l.longPoll(ctx, resultsCtx, key, id)
		}
	case l.c.backends > 0:
		b := l.backend[n%int64(len(l.backend))]
		gen := b.begin()
		id := l.create(ctx, key, body, first, due)
		if id == "" {
			b.end(gen)
			return
		}
		l.startWaiting()
		defer l.waiting.Add(-1)
		b.wait(ctx, resultsCtx, id, gen)
	default:
		l.sseTicket(ctx, resultsCtx, key, body, first, due)
	}
}

func (l *load) startWaiting() {
	w := l.waiting.Add(1)
	for {
		p := l.peakWaiting.Load()
		if w <= p || l.peakWaiting.CompareAndSwap(p, w) {
			return
		}
	}
}

// ticketJSON is what the soak reads of a ticket.
type ticketJSON struct {
	Status     string    `json:"status"`
	UpdatedAt  time.Time `json:"updated_at"`
	Assignment *struct {
		MatchID string `json:"match_id"`
		Teams   []struct {
			Players []string `json:"players"`
		} `json:"teams"`
	} `json:"assignment"`
}

// ended is what a ticket no longer searching says, seen by its client at seen: its outcome
// and its match's teams.
func (t ticketJSON) ended(seen time.Time) (outcome, [][]string) {
	o := outcome{status: t.Status, at: t.UpdatedAt, seen: seen}
	var teams [][]string
	if a := t.Assignment; a != nil {
		o.matchID = a.MatchID
		for _, tm := range a.Teams {
			teams = append(teams, tm.Players)
		}
	}
	return o, teams
}

// longPoll asks for the ticket with ?wait_s= until it is no longer searching (or the run
// ends), as a game backend does; after an error it waits Retry-After (at most 5 s) or half a
// second, and asks again.
func (l *load) longPoll(ctx, resultsCtx context.Context, key, id string) {
	q := "/v1/tickets/" + id + "?wait_s=" + strconv.Itoa(l.c.waitS)
	timeout := time.Duration(l.c.waitS)*time.Second + 15*time.Second
	for ctx.Err() == nil {
		st, b, h, err := l.do(ctx, key, "longpoll", http.MethodGet, l.pick().base+q, nil, timeout)
		seen := time.Now()
		if err == nil && st == http.StatusOK {
			var t ticketJSON
			if json.Unmarshal(b, &t) == nil && t.Status != "" {
				if t.Status == "searching" {
					continue
				}
				o, teams := t.ended(seen)
				l.finish(resultsCtx, key, o, teams)
				return
			}
		}
		backoff(ctx, h)
	}
}

// backoff sleeps after a failed request: Retry-After (at most 5 s), else half a second, plus
// up to 20% jitter.
func backoff(ctx context.Context, h http.Header) {
	d := 500 * time.Millisecond
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s >= 0 {
		d = min(time.Duration(s)*time.Second, 5*time.Second)
	}
	d += time.Duration(rand.Int64N(int64(d)/5 + 1))
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// finish records a ticket's end; the first client to see a match posts its result.
func (l *load) finish(resultsCtx context.Context, key string, o outcome, teams [][]string) {
	l.ended.Add(1)
	first := false
	l.mu.Lock()
	l.outcomes = append(l.outcomes, o)
	if o.status == "matched" && o.matchID != "" {
		if _, ok := l.matches[o.matchID]; !ok {
			l.matches[o.matchID] = &matchInfo{}
			first = true
		}
	}
	l.mu.Unlock()
	if first {
		l.results.Add(1)
		l.workers.goRun(func() { l.postResult(resultsCtx, key, o.matchID, teams) })
	}
}

// matchJSON is what the soak reads of GET /v1/matches/{id}.
type matchJSON struct {
	CreatedAt time.Time `json:"created_at"`
	Teams     []struct {
		Players []struct {
			ID string `json:"id"`
		} `json:"players"`
	} `json:"teams"`
}

// postResult reads the match (its creation time is the latency's reference; its teams, the
// result's) and posts a result for it, retrying a failure twice a second apart (the match id
// is the idempotency key).
func (l *load) postResult(ctx context.Context, key, id string, teams [][]string) {
	defer l.results.Done()
	select {
	case l.resultSem <- struct{}{}:
	case <-ctx.Done():
		l.setResult(id, time.Time{}, "not posted (run ended)")
		return
	}
	defer func() { <-l.resultSem }()
	var created time.Time
	st, b, _, err := l.do(ctx, l.key, "match", http.MethodGet, l.pick().base+"/v1/matches/"+id, nil, l.c.timeout)
	if err == nil && st == http.StatusOK {
		var m matchJSON
		if json.Unmarshal(b, &m) == nil && len(m.Teams) == 2 {
			created = m.CreatedAt
			teams = teams[:0]
			for _, t := range m.Teams {
				var ids []string
				for _, p := range t.Players {
					ids = append(ids, p.ID)
				}
				teams = append(teams, ids)
			}
		}
	}
	if len(teams) != 2 {
		l.setResult(id, created, "not posted (match unread)")
		return
	}
	body := resultBody(id, teams, rand.IntN(2))
	for attempt := 0; attempt < 3; attempt++ {
		st, _, h, err := l.do(ctx, key, "result", http.MethodPost, l.pick().base+"/v1/results", body, l.c.timeout)
		if err == nil && (st == http.StatusCreated || st == http.StatusOK) {
			l.posted.Add(1)
			l.setResult(id, created, "posted")
			return
		}
		if ctx.Err() != nil || (err == nil && st < 500) {
			break
		}
		backoff(ctx, h)
	}
	l.setResult(id, created, "failed")
}

// resultBody is the result of match id: its teams red and blue, the winner's index.
func resultBody(id string, teams [][]string, winner int) []byte {
	b := make([]byte, 0, 160+32*(len(teams[0])+len(teams[1])))
	b = append(b, `{"match_id":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"context":{"game_type":"soak"},"map":"soak-map","duration_s":600,"teams":[`...)
	for t, ids := range teams {
		if t > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"side":`...)
		b = strconv.AppendQuote(b, []string{"red", "blue"}[t])
		b = append(b, `,"players":[`...)
		for k, p := range ids {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = strconv.AppendQuote(b, p)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"winner":`...)
	b = strconv.AppendInt(b, int64(winner), 10)
	return append(b, '}')
}

func (l *load) setResult(id string, created time.Time, result string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.matches[id]
	m.createdAt, m.result = created, result
}
