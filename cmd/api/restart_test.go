package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// The only replica dies mid-queue (its database connections cut, as when its machine dies)
// while its webhook receiver is down, and a new one starts on the same database: no ticket
// is lost (those searching at the death are matched by the new replica), an event
// stream resumed on the new replica with Last-Event-ID sees every event exactly once, and the
// webhook outbox delivers every event, the ones written before the death included.
func TestARestartLosesNoTicketAndNoEvent(t *testing.T) {
	// Not parallel: its load would starve the fault tests' (and theirs its timings).
	const secret = "restart-test-secret-0123"
	dbURL := dbtest.URL(t)

	// The webhook receiver: it records each delivery it accepts, and answers 503 while down;
	// it goes down by itself after its first ten deliveries.
	var hookDown atomic.Bool
	var hookMu sync.Mutex
	delivered := map[int64]string{} // seq -> ticket id
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := client.VerifyWebhook(secret, r.Header, body, time.Now(), 0); err != nil {
			t.Errorf("a delivery with a bad signature: %v: %s", err, body)
		}
		if hookDown.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var e struct {
			Seq      int64
			TicketID string `json:"ticket_id"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("delivery %s: %v", body, err)
		}
		hookMu.Lock()
		delivered[e.Seq] = e.TicketID // at least once: a repeat is deduplicated by its seq
		if len(delivered) == 10 {
			hookDown.Store(true)
		}
		hookMu.Unlock()
	}))
	defer hook.Close()

	start := func(migrate bool) (*proxy, program) {
		p := startProxy(t, dbURL)
		return p, startProgram(t, map[string]string{
			"DATABASE_URL": p.url, "MATCHMAKER_AUTH": "off", "MATCHMAKER_RATE_LIMITS": "match=off,read=off,admin=off",
			"MATCHMAKER_SHUTDOWN_TIMEOUT": "3s", "MATCHMAKER_MIGRATE": fmt.Sprint(migrate),
			"MATCHMAKER_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8", // the receiver is an httptest server
		})
	}
	firstProxy, first := start(true)
	defer first.stop()
	var base atomic.Value // the live replica's URL
	base.Store(first.base)
	client := &http.Client{Timeout: 10 * time.Second}
	status, body := call(t, client, http.MethodPut, first.base+"/v1/queues/duel", "",
		fmt.Sprintf(`{"context":{"game_type":"ctf"},"team_size":1,"tick_ms":100,"webhook":{"url":%q,"secret":%q}}`, hook.URL, secret))
	if status != http.StatusCreated {
		t.Fatalf("put queue: %d %s", status, body)
	}

	// The stream reader: it follows the live replica, resuming after the last id it read.
	ctx, stopReading := context.WithCancel(context.Background())
	defer stopReading()
	var streamMu sync.Mutex
	var streamed []int64
	streamedTicket := map[string]int{}
	reconnects := 0
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		last := int64(0)
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base.Load().(string)+"/v1/queues/duel/events", nil)
			req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Text()
				if !strings.HasPrefix(line, "data: ") {
					continue
				}
				var e struct {
					Seq      int64
					TicketID string `json:"ticket_id"`
				}
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e); err != nil {
					t.Errorf("event %s: %v", line, err)
				}
				streamMu.Lock()
				streamed = append(streamed, e.Seq)
				streamedTicket[e.TicketID]++
				streamMu.Unlock()
				last = e.Seq
			}
			resp.Body.Close()
			streamMu.Lock()
			reconnects++
			streamMu.Unlock()
		}
	}()

	const perReplica = 60
	var ids []string
	create := func(n int) {
		// Tickets 0..19 are rated in pairs far from the others and match each other before the
		// death; each of tickets 20..60, made before it, has a twin made after it (n+61) and
		// waits for it through the restart; tickets 61..80 pair among themselves after it.
		m := n % (perReplica + 1)
		rating := 1000 + (m/2)*100
		switch {
		case n > perReplica && m < 20:
			rating += 10000
		case m >= 20:
			rating = 20000 + m*100
		}
		req := fmt.Sprintf(`{"players":[{"id":"p%d","rating":%d}],"ttl_s":60}`, n, rating)
		for {
			status, body, err := send(client, http.MethodPost, base.Load().(string)+"/v1/queues/duel/tickets", fmt.Sprintf("k%d", n), req)
			if err == nil && (status == http.StatusCreated || status == http.StatusOK) {
				var tk struct{ ID string }
				if err := json.Unmarshal(body, &tk); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, tk.ID)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for n := range perReplica + 1 {
		create(n)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var head, acknowledged int64
	heads := func() {
		if err := conn.QueryRow(context.Background(), `SELECT event_seq, webhook_seq FROM queues WHERE name = 'duel'`).Scan(&head, &acknowledged); err != nil {
			t.Fatal(err)
		}
	}
	// Kill the replica once the receiver is down with events in the outbox.
	waitFor(t, "ten events acknowledged and more in the outbox", func() bool { heads(); return head >= 20 && acknowledged == 10 })
	firstProxy.cut()
	_ = first.stop()
	heads()
	outbox := head - acknowledged
	var waiting int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM queue_tickets WHERE status = 'searching'`).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	if waiting != perReplica+1-20 {
		t.Fatalf("%d tickets searching at the death, want the %d twins of tickets yet to come", waiting, perReplica+1-20)
	}

	_, second := start(false)
	defer second.stop()
	base.Store(second.base)
	hookDown.Store(false)
	for n := perReplica + 1; n < 2*perReplica+2; n++ {
		create(n)
	}

	waitFor(t, "every ticket to end and every event to be delivered", func() bool {
		var searching int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status = 'searching'),
			(SELECT event_seq FROM queues WHERE name = 'duel') FROM queue_tickets`).Scan(&searching, &head); err != nil {
			t.Fatal(err)
		}
		hookMu.Lock()
		n := len(delivered)
		hookMu.Unlock()
		streamMu.Lock()
		s := len(streamed)
		streamMu.Unlock()
		return searching == 0 && n == int(head) && s == int(head)
	})
	stopReading()
	<-readerDone

	if head != int64(len(ids)) {
		t.Errorf("%d events for %d tickets", head, len(ids))
	}
	streamMu.Lock()
	defer streamMu.Unlock()
	for i, seq := range streamed {
		if seq != int64(i+1) {
			t.Fatalf("the stream gave seq %d as its event %d: events lost or repeated across the restart", seq, i+1)
		}
	}
	hookMu.Lock()
	defer hookMu.Unlock()
	for _, id := range ids {
		if streamedTicket[id] != 1 {
			t.Errorf("ticket %s: %d events streamed, want one", id, streamedTicket[id])
		}
	}
	for seq := int64(1); seq <= head; seq++ {
		if delivered[seq] == "" {
			t.Errorf("event %d was never delivered to the webhook", seq)
		}
	}
	var matched int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM queue_tickets t
		WHERE t.id = ANY($1) AND t.status = 'matched'`, ids).Scan(&matched); err != nil {
		t.Fatal(err)
	}
	if matched != len(ids) {
		t.Errorf("%d of the %d tickets matched, want all (each has its twin)", matched, len(ids))
	}
	t.Logf("%d tickets (%d searching through the restart), %d events, streamed once each over %d connections, all delivered to the webhook (%d of them from the outbox the dead replica left)",
		len(ids), waiting, head, reconnects+1, outbox)
}

// waitFor polls cond every 20 ms for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}
