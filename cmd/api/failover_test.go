package main

// The failover test: the whole program on a primary and a synchronous standby of the test's
// own (pgfault.StartReplicated), DATABASE_URL listing both with
// target_session_attrs=read-write, under a steady rate of ticket creations and results, while
// the primary is killed and the standby promoted.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db/pgfault"
)

// The failover's load: the arrivals and results a second of the launch-week numbers,
// and how long the primary stays dead before the standby is promoted (a failover manager's
// detection: pg_auto_failover's default is about 20 s, cut short here; what is measured is
// what follows the promotion).
const (
	failoverTickets = 300 // creations a second
	failoverResults = 100 // results a second
	failoverDown    = 2 * time.Second
	// failoverResume bounds how long after the promotion ticket creation and matching may
	// take to resume.
	failoverResume = 5 * time.Second
)

// failoverInFlight caps the requests of one kind the paced load has in flight: an arrival due
// while the cap is reached is not sent (counted in skipped), so that a machine too busy for
// the rate (two cores, the race detector, other tests) slows the load rather than piles up
// requests until every one outlasts its bound.
const failoverInFlight = 16

// startPacedLoad sends each write load's requests at its rate (a second), whatever the
// answers: an open loop, as a studio's players arrive whether or not the service keeps up,
// with at most failoverInFlight of a kind in flight.
func startPacedLoad(base string, rates map[string]int) (*load, *atomic.Int64) {
	l := &load{base: base, stop: make(chan struct{}), client: &http.Client{Timeout: 10 * time.Second}, probe: startStallProbe()}
	skipped := new(atomic.Int64)
	for _, wl := range writeLoads() {
		if wl.setup.path != "" {
			if e := l.send(wl.name, http.MethodPut, wl.setup.path, wl.setup.body, ""); e.status/100 != 2 {
				panic("PUT " + wl.setup.path + " answered " + strconv.Itoa(e.status))
			}
		}
		rate := rates[wl.name]
		inFlight := make(chan struct{}, failoverInFlight)
		l.wg.Go(func() {
			start := time.Now()
			for n := 0; !l.stopped(); {
				// Every request due by now, so that a goroutine scheduled late on a busy machine
				// catches up rather than lowers the rate.
				for due := int(time.Since(start) * time.Duration(rate) / time.Second); n < due; n++ {
					select {
					case inFlight <- struct{}{}:
					default:
						skipped.Add(1)
						continue
					}
					// Results of a worker share its players: spread over workers, concurrent
					// results seldom share one.
					path, body, key := wl.request(n%32, n/32)
					l.wg.Go(func() {
						l.record(l.send(wl.name, http.MethodPost, path, body, key))
						<-inFlight
					})
				}
				time.Sleep(time.Second / time.Duration(rate))
			}
		})
	}
	return l, skipped
}

// TestFaultFailoverUnderLoad: the primary is killed (SIGKILL) under 300 ticket creations and
// 100 results a second, and the synchronous standby promoted two seconds later. Every request
// is answered within the store's deadline and a little (503s with Retry-After while there is
// no primary); ticket creation and matching resume within 5 s of the promotion, without a
// restart; every write acknowledged (201) before, during and after is on the new primary,
// exactly once, with nothing half-written.
func TestFaultFailoverUnderLoad(t *testing.T) {
	t.Parallel()
	r := pgfault.StartReplicated(t)
	var synchronous atomic.Bool
	p := startProgramLogging(t, map[string]string{
		"DATABASE_URL":                r.URL(),
		"MATCHMAKER_AUTH":             "off",
		"MATCHMAKER_STORE_TIMEOUT":    faultTimeout.String(),
		"MATCHMAKER_SHUTDOWN_TIMEOUT": "5s",
		"MATCHMAKER_RATE_LIMITS":      "read=off,match=off,results=off,admin=off",
	}, func(line []byte) {
		if strings.Contains(string(line), "every commit waits for a synchronous standby") {
			synchronous.Store(true)
		}
	})
	defer p.stop()
	if !synchronous.Load() {
		t.Error("the start-up did not log that every commit waits for the synchronous standby")
	}
	stream := readEvents(p.base, "fault")
	l, skipped := startPacedLoad(p.base, map[string]int{"tickets": failoverTickets, "results": failoverResults})
	began := time.Now()
	time.Sleep(phase(2 * time.Second))
	checkBounded(t, "before the kill", l.since(time.Time{}))

	r.Primary.Kill()
	killed := time.Now()
	time.Sleep(failoverDown)
	r.Promote()
	promoted := time.Now()
	t.Logf("primary killed; standby promoted %v later", promoted.Sub(killed).Round(time.Millisecond))

	conn, err := pgx.Connect(context.Background(), r.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	created := awaitRecovery(t, l, "promoted", promoted, failoverResume)
	matched := awaitMatch(t, conn, promoted, failoverResume)
	t.Logf("after the promotion: ticket creations and results acknowledged again within %v, the first match within %v",
		created.Round(time.Millisecond), matched.Round(time.Millisecond))
	time.Sleep(phase(2 * time.Second))

	all := l.finish()
	logRates(t, all, time.Since(began))
	t.Logf("%d arrivals not sent: %d requests of their kind were in flight", skipped.Load(), failoverInFlight)
	during := l.during(killed, promoted.Add(created))
	if n := checkBounded(t, "failover", during); n == 0 {
		t.Error("failover: no request answered 503: the load did not meet the fault")
	}
	checkBounded(t, "the whole run", all)
	verifyAcknowledged(t, l, conn, all)
	verifyQueueWhole(t, conn, "fault")
	stream.verify(t, conn, "fault")
}

// verifyQueueWhole checks that the queue's rows are each other's: no claim of a player
// without its live ticket, no searching ticket without its players' claims, no matched ticket
// without its match, no matched event without its matched ticket.
func verifyQueueWhole(t *testing.T, conn *pgx.Conn, queueName string) {
	t.Helper()
	for what, sql := range map[string]string{
		"claims without their live ticket": `SELECT count(*) FROM queue_searching AS s LEFT JOIN queue_tickets AS t ON t.id = s.ticket_id
			WHERE s.queue = $1 AND (t.id IS NULL OR t.status NOT IN ('searching', 'proposed', 'placing'))`,
		"searching tickets without their players' claims": `SELECT count(*) FROM queue_tickets AS t, jsonb_array_elements(t.players) AS p
			WHERE t.queue = $1 AND t.status = 'searching' AND NOT EXISTS (
				SELECT 1 FROM queue_searching AS s WHERE s.queue = t.queue AND s.player_id = p->>'id' AND s.ticket_id = t.id)`,
		"matched tickets without their match": `SELECT count(*) FROM queue_tickets AS t
			WHERE t.queue = $1 AND t.status = 'matched' AND NOT EXISTS (SELECT 1 FROM queue_matches AS m WHERE m.id = t.assignment->>'match_id')`,
		"matched events without their matched ticket": `SELECT count(*) FROM queue_events AS e LEFT JOIN queue_tickets AS t ON t.id = e.ticket_id
			WHERE e.queue = $1 AND e.type = 'matched' AND (t.id IS NULL OR t.status <> 'matched' OR t.assignment->>'match_id' <> e.match_id)`,
	} {
		var n int
		if err := conn.QueryRow(context.Background(), sql, queueName).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n != 0 {
			t.Errorf("the queue has %d %s", n, what)
		}
	}
}

// awaitMatch waits until the queue has a match made after t, and returns how long after t it
// was made.
func awaitMatch(t *testing.T, conn *pgx.Conn, t0 time.Time, within time.Duration) time.Duration {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var first *time.Time
		err := conn.QueryRow(context.Background(),
			`SELECT min(created_at) FROM queue_matches WHERE queue = 'fault' AND created_at > $1`, t0).Scan(&first)
		if err != nil {
			t.Fatalf("reading the matches: %v", err)
		}
		if first != nil {
			return first.Sub(t0)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no match made within %v of the promotion", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logRates logs how many requests of each kind were sent, and at what rate.
func logRates(t *testing.T, es []exchange, over time.Duration) {
	t.Helper()
	n := map[string]int{}
	for _, e := range es {
		n[e.kind]++
	}
	for kind, count := range n {
		t.Logf("%s: %d requests in %v (%.0f/s)", kind, count, over.Round(time.Millisecond), float64(count)/over.Seconds())
	}
}

// eventReader follows a queue's event stream (SSE), resuming after the last id it read
// whenever the stream ends or breaks, as a game backend does.
type eventReader struct {
	stop    context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	events  []streamedEvent
	resumed int // streams opened after the first
}

// streamedEvent is what the test reads of an event.
type streamedEvent struct {
	Seq      int64  `json:"seq"`
	Type     string `json:"type"`
	TicketID string `json:"ticket_id"`
}

func readEvents(base, queueName string) *eventReader {
	ctx, stop := context.WithCancel(context.Background())
	r := &eventReader{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		last := int64(-1) // from now on
		for opened := 0; ctx.Err() == nil; opened++ {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/queues/"+queueName+"/events", nil)
			if last >= 0 {
				req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				if err == nil {
					resp.Body.Close()
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
			r.mu.Lock()
			r.resumed = opened
			r.mu.Unlock()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				var e streamedEvent
				if json.Unmarshal([]byte(data), &e) != nil {
					continue
				}
				r.mu.Lock()
				r.events = append(r.events, e)
				r.mu.Unlock()
				last = e.Seq
			}
			resp.Body.Close()
			if last < 0 {
				last = 0 // a first stream that ended before its first event: resume from the start
			}
		}
	}()
	return r
}

// verify waits until the reader has read the queue's last event, stops it, and checks that
// it read every event of the queue after its first one exactly once, in order, each as the
// database has it.
func (r *eventReader) verify(t *testing.T, conn *pgx.Conn, queueName string) {
	t.Helper()
	ctx := context.Background()
	var head int64
	if err := conn.QueryRow(ctx, `SELECT event_seq FROM queues WHERE name = $1`, queueName).Scan(&head); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		n := len(r.events)
		caughtUp := n > 0 && r.events[n-1].Seq >= head
		r.mu.Unlock()
		if caughtUp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event stream did not reach the queue's last event (%d) within 10 s; it read %d", head, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.stop()
	<-r.done
	rows, err := conn.Query(ctx, `SELECT seq, type, ticket_id FROM queue_events WHERE queue = $1 AND seq >= $2 ORDER BY seq`,
		queueName, r.events[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	var stored []streamedEvent
	var e streamedEvent
	if _, err := pgx.ForEachRow(rows, []any{&e.Seq, &e.Type, &e.TicketID}, func() error { stored = append(stored, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.events, stored) {
		for i := range max(len(r.events), len(stored)) {
			if i >= len(r.events) || i >= len(stored) || r.events[i] != stored[i] {
				t.Fatalf("the event stream and the database differ from their %d-th event of %d and %d: %+v",
					i, len(r.events), len(stored), r.events[i:min(i+3, len(r.events))])
			}
		}
	}
	t.Logf("the event stream read events %d..%d, every one once and as stored, in %d streams",
		r.events[0].Seq, r.events[len(r.events)-1].Seq, r.resumed+1)
}
