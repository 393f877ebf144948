package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// Three replicas of the whole program share one Postgres; concurrent clients create tickets
// through any of them (parties of two among them, some cancelled at once, racing the tick)
// while the leader of the queue is killed mid-run: its every connection to the database is
// cut at once, as when its machine dies, and the program is stopped without resigning (its
// resignation can no longer reach the database). Then every acknowledged ticket ends matched,
// expired or cancelled exactly once, with exactly one event; no ticket is in two matches and
// none is lost or made twice (a create whose answer was lost is retried on another replica
// with the same Idempotency-Key); and another replica leads and ticks within two tick
// intervals of the kill, and the stalls of the process's timers meanwhile (stallProbe: the
// replicas run in this process, and on a loaded host their schedules slip as the probe's do).
func TestReplicasSurviveTheLeadersDeath(t *testing.T) {
	// Not parallel: its load would starve the fault tests' (and theirs its timings).
	tickets := 20000
	if testing.Short() {
		tickets = 2000
	}
	const tick = time.Second // the queue's default tick_ms
	dbURL := dbtest.URL(t)

	var mu sync.Mutex
	var leads []leadLog // every "queue: leading" line, in the order logged
	var reps []*replica
	for i := range 3 {
		r := &replica{index: i, proxy: startProxy(t, dbURL)}
		env := map[string]string{
			"DATABASE_URL":                r.proxy.url,
			"MATCHMAKER_AUTH":             "off",
			"MATCHMAKER_RATE_LIMITS":      "match=off,read=off,admin=off",
			"MATCHMAKER_SHUTDOWN_TIMEOUT": "3s",
			// Three replicas at the default 16 held 54 connections (now 6 + 6 of the queue store
			// each) of a server that other test packages and runs share.
			"MATCHMAKER_DB_MAX_CONNS": "6",
			"MATCHMAKER_MIGRATE":      fmt.Sprint(i == 0), // the first migrates before the others start
		}
		onLog := func(line []byte) {
			var l struct {
				Time time.Time
				Msg  string
			}
			if bytes.Contains(line, []byte(`"queue: leading"`)) && json.Unmarshal(line, &l) == nil {
				mu.Lock()
				leads = append(leads, leadLog{replica: i, at: l.Time})
				mu.Unlock()
			}
		}
		r.program = startProgramLogging(t, env, onLog)
		defer r.program.stop()
		reps = append(reps, r)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	status, body := call(t, client, http.MethodPut, reps[1].program.base+"/v1/queues/arena", "",
		fmt.Sprintf(`{"context":{"game_type":"ctf"},"team_size":2,"max_party_size":2,"tick_ms":%d}`, tick.Milliseconds()))
	if status != http.StatusCreated {
		t.Fatalf("put queue: %d %s", status, body)
	}
	// The replicas see the new queue at their next refresh of the definitions; one leads it.
	for wait := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(leads)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(wait) {
			t.Fatal("no replica leads the new queue after 10 s")
		}
	}

	var alive atomic.Int32 // a bit per live replica
	alive.Store(0b111)
	var (
		created   atomic.Int64
		acked     = make([]ackedTicket, tickets)
		next      atomic.Int64
		killAt    time.Time
		victim    = -1
		retries   atomic.Int64
		clientsWG sync.WaitGroup
	)
	const workers = 48
	for w := range workers {
		clientsWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				n := int(next.Add(1)) - 1
				if n >= tickets {
					return
				}
				// Ticket n: a party of two one time in five, each player's own ids; ratings
				// spread like a game's population.
				players := fmt.Sprintf(`{"id":"p%d-a","rating":%.1f}`, n, 1000+150*rng.NormFloat64())
				if n%5 == 0 {
					players += fmt.Sprintf(`,{"id":"p%d-b","rating":%.1f}`, n, 1000+150*rng.NormFloat64())
				}
				req := fmt.Sprintf(`{"players":[%s],"ttl_s":8}`, players)
				key := fmt.Sprintf("key-%d", n)
				for attempt := 0; ; attempt++ {
					if attempt > 0 {
						retries.Add(1)
						time.Sleep(20 * time.Millisecond)
					}
					r := reps[pickLive(rng, alive.Load())]
					status, body, err := send(client, http.MethodPost, r.program.base+"/v1/queues/arena/tickets", key, req)
					if err != nil || status >= 500 {
						continue // the replica died, or its database did, with this request: retry elsewhere
					}
					if status != http.StatusCreated && status != http.StatusOK {
						t.Errorf("ticket %d: %d %s", n, status, body)
						return
					}
					var tk struct{ ID string }
					if err := json.Unmarshal(body, &tk); err != nil || tk.ID == "" {
						t.Errorf("ticket %d: %s", n, body)
						return
					}
					acked[n] = ackedTicket{id: tk.ID, attempts: attempt + 1}
					break
				}
				created.Add(1)
				if n%20 == 7 { // the client gives up at once: the cancel races the leader's tick
					for {
						r := reps[pickLive(rng, alive.Load())]
						status, _, err := send(client, http.MethodDelete, r.program.base+"/v1/tickets/"+acked[n].id, "", "")
						if err != nil || status >= 500 {
							time.Sleep(20 * time.Millisecond)
							continue
						}
						acked[n].cancel = status
						break
					}
				}
			}
		})
	}

	// Kill the leader once half the tickets are in.
	for created.Load() < int64(tickets/2) {
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	if len(leads) > 0 {
		victim = leads[len(leads)-1].replica
	}
	mu.Unlock()
	if victim < 0 {
		t.Fatal("no replica leads the queue half way through")
	}
	probe := startStallProbe()
	defer probe.close()
	killAt = time.Now()
	reps[victim].proxy.cut() // the database sees the replica's sessions end, its lock with them
	alive.And(^int32(1 << victim))
	go reps[victim].program.stop() // without the database, it cannot resign any more
	clientsWG.Wait()
	if t.Failed() {
		return
	}

	// Another replica takes the lead and ticks within two tick intervals.
	var took time.Duration
	successor := -1
	deadline := time.Now().Add(10 * time.Second)
	for took == 0 {
		mu.Lock()
		for _, l := range leads {
			if l.replica != victim && l.at.After(killAt) {
				took, successor = l.at.Sub(killAt), l.replica
				break
			}
		}
		mu.Unlock()
		if took == 0 && time.Now().After(deadline) {
			t.Fatal("no replica led the queue within 10 s of the leader's death")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stalled := probe.during(killAt, killAt.Add(took))
	t.Logf("%d tickets (%d create retries); the leader (replica %d) was killed after %d; replica %d took the lead %v later (tick %v; the process's timers held back %v meanwhile)",
		tickets, retries.Load(), victim, tickets/2, successor, took.Round(time.Millisecond), tick, stalled.Round(time.Millisecond))
	if took > 2*tick+stalled {
		t.Errorf("the new leader ticked %v after the kill, want within 2 ticks (%v) and the %v the process's timers were held back meanwhile",
			took, 2*tick, stalled)
	}

	// Every ticket ends: matched, or expired at its 8 s TTL, or cancelled.
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline = time.Now().Add(30 * time.Second)
	for {
		var searching int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM queue_tickets WHERE status = 'searching'`).Scan(&searching); err != nil {
			t.Fatal(err)
		}
		if searching == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tickets still searching 30 s after the last was created (TTL 8 s)", searching)
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkEveryTicketEndedOnce(t, conn, acked)
}

type leadLog struct {
	replica int
	at      time.Time
}

type replica struct {
	index   int
	proxy   *proxy
	program program
}

// ackedTicket is a ticket the service acknowledged, and what its cancel (when the client sent
// one) answered.
type ackedTicket struct {
	id       string
	attempts int
	cancel   int // 0: not cancelled
}

// pickLive picks one of the replicas whose bit is set in alive.
func pickLive(rng *rand.Rand, alive int32) int {
	for {
		if i := rng.IntN(3); alive&(1<<i) != 0 {
			return i
		}
	}
}

// checkEveryTicketEndedOnce checks the database against what the clients were told: the
// queue holds exactly the acknowledged tickets, each finished, with one event that agrees with
// its status; every matched ticket is in exactly one match, the one its assignment names; a
// cancel answered 204 left the ticket cancelled, one answered 409 found it matched or expired.
func checkEveryTicketEndedOnce(t *testing.T, conn *pgx.Conn, acked []ackedTicket) {
	t.Helper()
	ctx := context.Background()
	type row struct {
		status, match string
		events        []string
		inMatches     []string
	}
	rows := map[string]*row{}
	rs, err := conn.Query(ctx, `SELECT id, status, coalesce(assignment->>'match_id', '') FROM queue_tickets WHERE queue = 'arena'`)
	if err != nil {
		t.Fatal(err)
	}
	var id, status, match string
	if _, err := pgx.ForEachRow(rs, []any{&id, &status, &match}, func() error {
		rows[id] = &row{status: status, match: match}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	rs, err = conn.Query(ctx, `SELECT seq, type, ticket_id, coalesce(match_id, '') FROM queue_events WHERE queue = 'arena' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	var typ string
	if _, err := pgx.ForEachRow(rs, []any{&seq, &typ, &id, &match}, func() error {
		seqs = append(seqs, seq)
		if r := rows[id]; r != nil {
			r.events = append(r.events, typ+":"+match)
		} else {
			t.Errorf("event %d names ticket %s, which is not in the queue", seq, id)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("event %d has seq %d: the queue's events must be numbered without gaps", i+1, s)
		}
	}
	rs, err = conn.Query(ctx, `SELECT m.id, p->>'ticket_id', jsonb_array_length(t->'players')
		FROM queue_matches m, jsonb_array_elements(m.teams) t, jsonb_array_elements(t->'players') p WHERE m.queue = 'arena'`)
	if err != nil {
		t.Fatal(err)
	}
	var teamSize int
	matches := map[string]bool{}
	if _, err := pgx.ForEachRow(rs, []any{&match, &id, &teamSize}, func() error {
		matches[match] = true
		if teamSize != 2 {
			t.Errorf("match %s has a team of %d players, want 2", match, teamSize)
		}
		if r := rows[id]; r != nil {
			if !strings.Contains(strings.Join(r.inMatches, ","), match) {
				r.inMatches = append(r.inMatches, match)
			}
		} else {
			t.Errorf("match %s holds ticket %s, which is not in the queue", match, id)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	count := map[string]int{}
	for n, a := range acked {
		r := rows[a.id]
		if r == nil {
			t.Errorf("ticket %d (%s) was acknowledged but is not in the queue", n, a.id)
			continue
		}
		count[r.status]++
		if len(r.events) != 1 {
			t.Errorf("ticket %s (%s) has events %v, want exactly one", a.id, r.status, r.events)
			continue
		}
		want := r.status
		if r.status == "matched" {
			want += ":" + r.match
			if len(r.inMatches) != 1 || r.inMatches[0] != r.match {
				t.Errorf("ticket %s is assigned match %s but is in matches %v", a.id, r.match, r.inMatches)
			}
		} else {
			want += ":"
			if len(r.inMatches) != 0 {
				t.Errorf("ticket %s is %s but is in matches %v", a.id, r.status, r.inMatches)
			}
		}
		if r.events[0] != want {
			t.Errorf("ticket %s: event %s, want %s", a.id, r.events[0], want)
		}
		switch {
		case a.cancel == http.StatusNoContent && r.status != "cancelled":
			t.Errorf("ticket %s: its cancel answered 204, yet it is %s", a.id, r.status)
		case a.cancel == http.StatusConflict && r.status == "cancelled":
			t.Errorf("ticket %s: its cancel answered 409, yet it is cancelled", a.id)
		case a.cancel != 0 && a.cancel != http.StatusNoContent && a.cancel != http.StatusConflict:
			t.Errorf("ticket %s: its cancel answered %d", a.id, a.cancel)
		case a.cancel == 0 && r.status == "cancelled":
			t.Errorf("ticket %s was cancelled, but no client cancelled it", a.id)
		}
		delete(rows, a.id)
	}
	for id, r := range rows {
		t.Errorf("ticket %s (%s) is in the queue but no client was given it", id, r.status)
	}
	if len(seqs) != len(acked) {
		t.Errorf("%d events for %d tickets", len(seqs), len(acked))
	}
	t.Logf("%d tickets: %d matched in %d matches, %d expired, %d cancelled",
		len(acked), count["matched"], len(matches), count["expired"], count["cancelled"])
	if count["matched"] < len(acked)/2 {
		t.Errorf("only %d of %d tickets matched: the queue hardly worked", count["matched"], len(acked))
	}
}

// send makes one request (with an Idempotency-Key when key is set) and returns the status and
// body, or the error of a request that got no answer.
func send(client *http.Client, method, url, key, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// call is send for requests that must get an answer.
func call(t *testing.T, client *http.Client, method, url, key, body string) (int, []byte) {
	t.Helper()
	status, b, err := send(client, method, url, key, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, b
}

// proxy forwards TCP connections to a Postgres server. Cutting it closes every connection it
// forwards and refuses new ones: to the server, the client's machine is gone.
type proxy struct {
	url string // the database URL, through the proxy
	ln  net.Listener

	mu    sync.Mutex
	conns []net.Conn
	cuts  bool
}

func startProxy(t *testing.T, dbURL string) *proxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	upstream := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = ln.Addr().String()
	p := &proxy{url: u.String(), ln: ln}
	t.Cleanup(p.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c, upstream)
		}
	}()
	return p
}

func (p *proxy) forward(c net.Conn, upstream string) {
	s, err := net.Dial("tcp", upstream)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cuts {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(s, c); s.Close(); c.Close() }()
	go func() { _, _ = io.Copy(c, s); s.Close(); c.Close() }()
}

// cut closes the listener and every forwarded connection, both sides.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
