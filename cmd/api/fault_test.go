package main

// The fault suite: the whole program on a Postgres of the test's own (package pgfault), under
// a steady load of writes and reads, while the database is frozen, stopped and brought back.
// Run it alone with `make test-fault`.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db/pgfault"
)

// faultTimeout is the store's call deadline in the fault tests: every request must be answered
// within it and faultSlack, whatever the database does, plus the stalls of the process's
// timers while it was out (stallProbe: on a loaded host the deadline itself fires late). The
// slack is what a request needs past the deadline to be answered on two cores under -race
// with eight writers: a tenth of the deadline was too little on this machine
// (docs/performance.md, "Stalls the tests allow for"). A hang still shows: as no answer.
const (
	faultTimeout = time.Second
	faultSlack   = 500 * time.Millisecond
)

// exchange is one request the load sent and what came of it.
type exchange struct {
	kind       string // the writeLoad's or the reader's name
	method     string
	path, body string
	key        string // the Idempotency-Key header, if any
	start      time.Time
	took       time.Duration
	status     int // 0: no answer (the client gave up or the connection broke)
	retryAfter string
	replayed   bool // answered as a replay of an earlier request with the same body
	err        error
	stalled    time.Duration // how long the process's timers were held back meanwhile
}

// A writeLoad is one kind of write the fault tests keep up during the faults: how to make its
// n-th request on a worker, and how to check at the end that every write the service
// acknowledged is stored exactly once.
type writeLoad struct {
	name string
	// setup, if any, is a PUT the load needs before its first write (a queue to join).
	setup struct{ path, body string }
	// request makes the n-th write of a worker, with its Idempotency-Key if it needs one
	// to be retried safely.
	request func(worker, n int) (path, body, key string)
	// verify gets every request sent, each retried until it was acknowledged (so all of them
	// were), and the database.
	verify func(t *testing.T, conn *pgx.Conn, sent []exchange)
}

func writeLoads() []writeLoad {
	return []writeLoad{resultWrites(), ticketWrites()}
}

// acknowledged says whether a write's answer means it is stored: 201, or the 200 of a
// ticket creation answered as a replay of an earlier one.
func (e exchange) acknowledged() bool {
	return e.status == http.StatusCreated || (e.status == http.StatusOK && e.replayed)
}

// ticketWrites joins a queue of 1v1 matches, one player a ticket, with the player's name as
// the Idempotency-Key: the queue's leader meanwhile matches them, on the same database.
func ticketWrites() writeLoad {
	wl := writeLoad{
		name: "tickets",
		request: func(worker, n int) (string, string, string) {
			id := fmt.Sprintf("w%d-t%d", worker, n)
			return "/v1/queues/fault/tickets", fmt.Sprintf(`{"players":[{"id":%q,"rating":%d}]}`, id, 1000+n%7*10), id
		},
		verify: func(t *testing.T, conn *pgx.Conn, sent []exchange) {
			ids := map[string]bool{}
			for _, e := range sent {
				ids[e.key] = true
			}
			rows, err := conn.Query(context.Background(), `SELECT players->0->>'id' FROM queue_tickets WHERE queue = 'fault'`)
			if err != nil {
				t.Fatal(err)
			}
			stored := map[string]int{}
			var id string
			if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { stored[id]++; return nil }); err != nil {
				t.Fatal(err)
			}
			for id := range ids {
				if stored[id] != 1 {
					t.Errorf("ticket of %s: acknowledged, stored %d times", id, stored[id])
				}
			}
			for id := range stored {
				if !ids[id] {
					t.Errorf("ticket of %s stored but never acknowledged", id)
				}
			}
			t.Logf("%d tickets acknowledged, each stored once", len(ids))
		},
	}
	wl.setup.path = "/v1/queues/fault"
	wl.setup.body = `{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":100,
		"expansions":{"interval":[{"after_s":0,"value":100}]}}`
	return wl
}

// resultWrites posts 2v2 results; each worker has its own four players, as a player is in one
// match at a time, so results of different workers share no player and commit together.
func resultWrites() writeLoad {
	return writeLoad{
		name: "results",
		request: func(worker, n int) (string, string, string) {
			p := func(i int) string { return fmt.Sprintf("w%d-p%d", worker, i) }
			return "/v1/results", fmt.Sprintf(`{"match_id":"w%d-m%d","context":{"game_type":"ctf"},"map":"face","duration_s":600,
				"teams":[{"side":"red","players":[{"id":%q},{"id":%q}]},{"side":"blue","players":[{"id":%q},{"id":%q}]}],
				"winner":%d}`, worker, n, p(0), p(1), p(2), p(3), n%2), ""
		},
		verify: func(t *testing.T, conn *pgx.Conn, sent []exchange) {
			ctx := context.Background()
			var stored, distinct int
			if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT match_id) FROM matches`).Scan(&stored, &distinct); err != nil {
				t.Fatal(err)
			}
			ids := map[string]bool{}
			games := map[string]int{}
			for _, e := range sent {
				id := e.body[strings.Index(e.body, `"match_id":"`)+12:]
				id = id[:strings.IndexByte(id, '"')]
				if ids[id] {
					continue
				}
				ids[id] = true
				w := strings.SplitN(id, "-", 2)[0]
				for i := range 4 {
					games[fmt.Sprintf("%s-p%d", w, i)]++
				}
			}
			if stored != len(ids) || distinct != len(ids) {
				t.Errorf("%d results acknowledged, %d rows stored (%d distinct match ids)", len(ids), stored, distinct)
			}
			// Every result moved each of its players once: no update lost, none applied twice.
			rows, err := conn.Query(ctx, `SELECT participant_id, games FROM ratings WHERE NOT is_bot`)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			var id string
			var n int64
			if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { got[id] = int(n); return nil }); err != nil {
				t.Fatal(err)
			}
			for p, want := range games {
				if got[p] != want {
					t.Errorf("player %s: %d games stored, %d acknowledged", p, got[p], want)
				}
			}
		},
	}
}

// load keeps workers writing (each load in writeLoads) and a reader reading until stopped.
type load struct {
	base   string
	client *http.Client
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	done   []exchange
	probe  *stallProbe
}

func startLoad(base string, writers int) *load {
	l := &load{base: base, stop: make(chan struct{}),
		// Far above the bound the test asserts: a request that hangs shows as one with no answer.
		client: &http.Client{Timeout: 10 * time.Second}, probe: startStallProbe()}
	for _, wl := range writeLoads() {
		if wl.setup.path != "" {
			if e := l.send(wl.name, http.MethodPut, wl.setup.path, wl.setup.body, ""); e.status/100 != 2 {
				panic(fmt.Sprintf("PUT %s answered %d: %v", wl.setup.path, e.status, e.err))
			}
		}
		for w := range writers {
			l.wg.Go(func() {
				for n := 0; !l.stopped(); n++ {
					path, body, key := wl.request(w, n)
					l.record(l.send(wl.name, http.MethodPost, path, body, key))
				}
			})
		}
	}
	l.wg.Go(func() {
		for !l.stopped() {
			l.record(l.send("reads", http.MethodGet, "/v1/players/w0-p0/ratings", "", ""))
			l.record(l.send("reads", http.MethodGet, "/v1/leaderboard?game_type=ctf&limit=5", "", ""))
		}
	})
	return l
}

func (l *load) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *load) send(kind, method, path, body, key string) exchange {
	e := exchange{kind: kind, method: method, path: path, body: body, key: key, start: time.Now()}
	req, _ := http.NewRequest(method, l.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := l.client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		e.status, e.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		e.replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	}
	e.took, e.err = time.Since(e.start), err
	if err == nil && e.status == http.StatusServiceUnavailable {
		time.Sleep(20 * time.Millisecond) // a client that waits a little before the next write
	}
	return e
}

func (l *load) record(e exchange) {
	e.stalled = l.probe.during(e.start, e.start.Add(e.took))
	l.mu.Lock()
	l.done = append(l.done, e)
	l.mu.Unlock()
}

// since returns the exchanges that started at or after t.
func (l *load) since(t time.Time) []exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []exchange
	for _, e := range l.done {
		if !e.start.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// during returns the exchanges that were in flight at some moment between from and to: those
// that met a fault, whenever they started.
func (l *load) during(from, to time.Time) []exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []exchange
	for _, e := range l.done {
		if e.start.Before(to) && e.start.Add(e.took).After(from) {
			out = append(out, e)
		}
	}
	return out
}

func (l *load) finish() []exchange {
	close(l.stop)
	l.wg.Wait()
	l.probe.close()
	return l.since(time.Time{})
}

// checkBounded fails the test for every exchange that took longer than the bound or got no
// answer, and for every 503 without Retry-After; it returns how many were 503s.
func checkBounded(t *testing.T, phase string, es []exchange) (unavailable int) {
	t.Helper()
	bound := faultTimeout + faultSlack
	var worst, stalled time.Duration
	for _, e := range es {
		worst, stalled = max(worst, e.took), max(stalled, e.stalled)
		switch {
		case e.status == 0:
			t.Errorf("%s: %s %s got no answer after %v: %v", phase, e.method, e.path, e.took, e.err)
		case e.took > bound+e.stalled:
			t.Errorf("%s: %s %s answered %d after %v, over the bound of %v and the %v the process's timers were held back meanwhile",
				phase, e.method, e.path, e.status, e.took, bound, e.stalled)
		case e.status == http.StatusServiceUnavailable:
			unavailable++
			if e.retryAfter == "" {
				t.Errorf("%s: a 503 without Retry-After", phase)
			}
		case e.status >= 500:
			t.Errorf("%s: %s %s answered %d", phase, e.method, e.path, e.status)
		}
	}
	t.Logf("%s: %d requests, %d answered 503, slowest %v (bound %v and the stalls meanwhile, at most %v)", phase, len(es), unavailable,
		worst.Round(time.Millisecond), bound, stalled.Round(time.Millisecond))
	return unavailable
}

// awaitRecovery waits until a write of every load has succeeded since t, and returns how long
// after t the last of them did.
func awaitRecovery(t *testing.T, l *load, phase string, t0 time.Time, within time.Duration) time.Duration {
	t.Helper()
	deadline := t0.Add(within)
	for {
		var last time.Time
		recovered := 0
		for _, wl := range writeLoads() {
			for _, e := range l.since(t0) {
				if e.kind == wl.name && e.acknowledged() {
					if end := e.start.Add(e.took); end.After(last) {
						last = end
					}
					recovered++
					break
				}
			}
		}
		if recovered == len(writeLoads()) {
			return last.Sub(t0)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: writes did not succeed again within %v, without restarting the service", phase, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// durations of the fault phases: shorter with -short, long enough either way for many
// requests to meet the fault (several deadlines' worth).
func phase(long time.Duration) time.Duration {
	if testing.Short() {
		return long / 2
	}
	return long
}

// TestFaultFreezeAndStopUnderLoad: the whole program under a load of writes and reads while
// its database is frozen (SIGSTOP: it accepts connections and answers nothing), then thawed,
// then stopped and started again. Every request is answered within the store's deadline and
// a little, 503s with Retry-After while the database is away; writes succeed again after it
// comes back without a restart; and at the end every acknowledged write is stored exactly
// once (every request is retried until acknowledged, a 503 whose commit got through being
// answered as a replay).
func TestFaultFreezeAndStopUnderLoad(t *testing.T) {
	t.Parallel()
	srv := pgfault.Start(t)
	p := startProgram(t, map[string]string{
		"DATABASE_URL":                srv.URL(),
		"MATCHMAKER_AUTH":             "off",
		"MATCHMAKER_STORE_TIMEOUT":    faultTimeout.String(),
		"MATCHMAKER_SHUTDOWN_TIMEOUT": "5s",
		// The load is one caller far over any sane rate; the limits are tested on their own.
		"MATCHMAKER_RATE_LIMITS": "read=off,match=off,results=off,admin=off",
	})
	defer p.stop()
	l := startLoad(p.base, 8)
	time.Sleep(phase(time.Second))

	checkBounded(t, "before the faults", l.since(time.Time{}))

	srv.Freeze()
	frozen := time.Now()
	time.Sleep(phase(4 * time.Second))
	srv.Thaw()
	thawed := time.Now()
	recovered := awaitRecovery(t, l, "thawed", thawed, 10*time.Second)
	if n := checkBounded(t, "frozen", l.during(frozen, thawed)); n == 0 {
		t.Error("frozen: no request answered 503: the load did not meet the fault")
	}
	t.Logf("frozen: writes recovered %v after the thaw", recovered.Round(time.Millisecond))

	time.Sleep(phase(time.Second))
	srv.Stop()
	stopped := time.Now()
	time.Sleep(phase(2 * time.Second))
	srv.Start()
	started := time.Now()
	recovered = awaitRecovery(t, l, "restarted", started, 10*time.Second)
	if n := checkBounded(t, "stopped", l.during(stopped, started)); n == 0 {
		t.Error("stopped: no request answered 503: the load did not meet the fault")
	}
	t.Logf("stopped: writes recovered %v after the restart", recovered.Round(time.Millisecond))
	time.Sleep(phase(time.Second))

	all := l.finish()
	checkBounded(t, "the whole run", all)

	conn, err := pgx.Connect(context.Background(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	verifyAcknowledged(t, l, conn, all)
}

// verifyAcknowledged sends every write of all not acknowledged again until it is (the same
// body, so that a result whose commit went through before its 503 is answered as a replay,
// not stored twice), then checks on conn's database that every write is stored exactly once
// (each load's verify).
func verifyAcknowledged(t *testing.T, l *load, conn *pgx.Conn, all []exchange) {
	t.Helper()
	var sent []exchange
	retried, replayed := 0, 0
	for _, e := range all {
		if e.kind == "reads" {
			continue
		}
		if !e.acknowledged() {
			retried++
		}
		for !e.acknowledged() {
			if e.status != 0 && e.status != http.StatusServiceUnavailable {
				t.Fatalf("%s %s answered %d on its retry", e.method, e.path, e.status)
			}
			e = l.send(e.kind, e.method, e.path, e.body, e.key)
			if e.replayed {
				replayed++
			}
		}
		sent = append(sent, e)
	}
	t.Logf("%d writes acknowledged; %d retried after the faults, of which %d had been stored before their 503 (replays)", len(sent), retried, replayed)
	for _, wl := range writeLoads() {
		var mine []exchange
		for _, e := range sent {
			if e.kind == wl.name {
				mine = append(mine, e)
			}
		}
		wl.verify(t, conn, mine)
	}
}

// TestFaultShutdownUnderLoadWithAFrozenDatabase: SIGTERM (run's context cancelled) while
// requests are stuck on a frozen database, with a store deadline longer than the shutdown
// timeout: run returns within MATCHMAKER_SHUTDOWN_TIMEOUT and a second, and logs what it
// abandoned.
func TestFaultShutdownUnderLoadWithAFrozenDatabase(t *testing.T) {
	t.Parallel()
	const shutdownTimeout = 2 * time.Second
	srv := pgfault.Start(t)
	p := startProgram(t, map[string]string{
		"DATABASE_URL":                srv.URL(),
		"MATCHMAKER_AUTH":             "off",
		"MATCHMAKER_STORE_TIMEOUT":    "30s",
		"MATCHMAKER_SHUTDOWN_TIMEOUT": shutdownTimeout.String(),
	})
	l := startLoad(p.base, 8)
	time.Sleep(phase(time.Second))
	srv.Freeze()
	defer srv.Thaw()
	time.Sleep(500 * time.Millisecond) // requests pile up on the frozen database

	start := time.Now()
	err := p.stop()
	took := time.Since(start)
	t.Logf("run returned %v after the signal: %v", took.Round(time.Millisecond), err)
	if took > shutdownTimeout+time.Second {
		t.Errorf("shutdown took %v, over MATCHMAKER_SHUTDOWN_TIMEOUT (%v) + 1s", took, shutdownTimeout)
	}
	if err == nil || !strings.Contains(err.Error(), "abandoned") {
		t.Errorf("run returned %v, want an error that says what the shutdown abandoned", err)
	}
	l.finish()
}
