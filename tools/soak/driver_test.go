package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// ticketBodyPrinted is ticketBody as it was written with fmt: the appended one must send
// the same bytes.
func ticketBodyPrinted(l *load, n int64) ([]byte, string) {
	rng := rand.New(rand.NewPCG(l.c.seed, uint64(n)))
	size := 1
	if rng.Float64() < l.c.parties {
		size = 2 + rng.IntN(min(5, l.c.teamSize)-1)
	}
	level := 1000 + l.c.ratingSD*rng.NormFloat64()
	var b bytes.Buffer
	b.WriteString(`{"players":[`)
	first := ""
	for k := range size {
		if k > 0 {
			b.WriteString(",")
		}
		r := level
		if size > 1 {
			r += l.c.ratingSD / 4 * rng.NormFloat64()
		}
		id := fmt.Sprintf("s%s-%d-%d", l.runID, n, k)
		if k == 0 {
			first = id
		}
		fmt.Fprintf(&b, `{"id":%q,"rating":%.1f}`, id, r)
	}
	b.WriteString(`]`)
	if l.c.partitions > 0 {
		fmt.Fprintf(&b, `,"attributes":{"mode":%q}`, modeOf(n, l.c.partitions))
	}
	b.WriteString(`}`)
	return b.Bytes(), first
}

func TestTicketBodyAsPrinted(t *testing.T) {
	for _, c := range []config{
		{seed: 7, parties: 0.2, teamSize: 5, ratingSD: 200},
		{seed: 8, parties: 0, teamSize: 1, ratingSD: 200, partitions: 4},
		{seed: 9, parties: 1, teamSize: 3, ratingSD: 0},
	} {
		l := &load{c: c, runID: "a1b2c3"}
		for n := range int64(2000) {
			got, gotFirst := l.ticketBody(n)
			want, wantFirst := ticketBodyPrinted(l, n)
			if !bytes.Equal(got, want) || gotFirst != wantFirst {
				t.Fatalf("%+v, arrival %d:\n got %s %s\nwant %s %s", c, n, got, gotFirst, want, wantFirst)
			}
		}
	}
}

func TestResultBodyAsPrinted(t *testing.T) {
	teams := [][]string{{"sab-1-0", "sab-1-1"}, {"sab-2-0", `odd "id"`}}
	var want bytes.Buffer
	fmt.Fprintf(&want, `{"match_id":%q,"context":{"game_type":"soak"},"map":"soak-map","duration_s":600,"teams":[`, "mt-1")
	for t, ids := range teams {
		if t > 0 {
			want.WriteString(",")
		}
		fmt.Fprintf(&want, `{"side":%q,"players":[`, []string{"red", "blue"}[t])
		for k, p := range ids {
			if k > 0 {
				want.WriteString(",")
			}
			fmt.Fprintf(&want, `{"id":%q}`, p)
		}
		want.WriteString("]}")
	}
	fmt.Fprintf(&want, `],"winner":%d}`, 1)
	if got := resultBody("mt-1", teams, 1); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("got  %s\nwant %s", got, want.Bytes())
	}
}

func event(ticket string, at time.Time) []byte {
	return fmt.Appendf(nil, `{"seq":1,"queue":"q","type":"expired","ticket_id":%q,"reason":"ttl","at":%q}`, ticket, at.Format(time.RFC3339Nano))
}

// A backend hands each event to its ticket, whether the ticket registered before the event
// or after it (its 201 later than the event), however long its creation takes; the events
// of tickets not its own are dropped two generations on, a generation ending once every
// creation begun before it has registered or given up.
func TestBackendHandsEventsToTheirTickets(t *testing.T) {
	l := &load{c: config{timeout: 15 * time.Second}, matches: map[string]*matchInfo{}}
	b := newTestBackend(l, 0)
	at := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	now := b.rotated
	waitFor := func(id string, gen int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.wait(ctx, ctx, id, gen)
		if ctx.Err() != nil {
			t.Fatalf("%s: no event", id)
		}
	}
	kept := func(id string) bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		_, early := b.early[id]
		_, earlier := b.earlier[id]
		return early || earlier
	}
	// Registered first.
	done := make(chan struct{})
	g1 := b.begin()
	go func() { defer close(done); waitFor("tk-1", g1) }()
	for {
		b.mu.Lock()
		_, ok := b.waiters["tk-1"]
		b.mu.Unlock()
		if ok {
			break
		}
		select {
		case <-done:
			t.Fatal("tk-1 ended before its event")
		default:
			runtime.Gosched()
		}
	}
	buf := event("tk-1", at)
	b.dispatch(buf, now)
	copy(buf, bytes.Repeat([]byte("x"), len(buf))) // the stream's buffer is reused
	<-done
	// The event first, the ticket registering a minute later: a creation in flight keeps
	// its generation's events, through any number of events and seconds.
	g2 := b.begin()
	b.dispatch(event("tk-2", at), now.Add(time.Second))
	b.dispatch(event("tk-never", at), now.Add(2*time.Second)) // no creation of it here
	for s := 3; s < 60; s++ {
		b.dispatch(event(fmt.Sprintf("tk-other-%d", s), at), now.Add(time.Duration(s)*time.Second))
	}
	waitFor("tk-2", g2)
	// A creation that gives up ends its generation too: then tk-never's event goes.
	g3 := b.begin()
	b.dispatch(event("tk-3", at), now.Add(61*time.Second))
	b.end(g3)
	if !kept("tk-never") || !kept("tk-3") {
		t.Fatal("events dropped while a creation begun before them was in flight")
	}
	for s := 62; s < 65; s++ {
		b.dispatch(event(fmt.Sprintf("tk-late-%d", s), at), now.Add(time.Duration(s)*time.Second))
	}
	if kept("tk-never") || kept("tk-3") {
		t.Error("events kept two generations after every creation begun before them ended")
	}
	if b.creating != [2]int{} {
		t.Errorf("creations in flight %v, want none", b.creating)
	}
	if len(l.outcomes) != 2 {
		t.Fatalf("outcomes %+v", l.outcomes)
	}
	for _, o := range l.outcomes {
		if o.status != "expired" || !o.at.Equal(at) {
			t.Errorf("outcome %+v", o)
		}
	}
	if !l.outcomes[0].seen.Equal(now) || !l.outcomes[1].seen.Equal(now.Add(time.Second)) {
		t.Errorf("seen %v %v, want when the events were read", l.outcomes[0].seen, l.outcomes[1].seen)
	}
}

// ticketIDAt finds the id after the first `"ticket_id":"` up to the next quote, in any
// input, or says there is none.
func FuzzTicketIDAt(f *testing.F) {
	f.Add([]byte(`{"seq":41,"queue":"q","type":"matched","ticket_id":"tk-3qf0","match_id":"mt-0p","team":1,"at":"2026-11-23T12:00:07Z"}`))
	f.Add([]byte(`{"ticket_id":"`))
	f.Add([]byte(`"ticket_id":""`))
	f.Add([]byte(`{"seq":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const key = `"ticket_id":"`
		i, j := ticketIDAt(data)
		k := bytes.Index(data, []byte(key))
		if k < 0 || bytes.IndexByte(data[k+len(key):], '"') < 0 {
			if i != -1 || j != -1 {
				t.Fatalf("%q: [%d:%d], want none", data, i, j)
			}
			return
		}
		if i != k+len(key) || j < i || j >= len(data) || data[j] != '"' || bytes.IndexByte(data[i:j], '"') >= 0 {
			t.Fatalf("%q: [%d:%d]", data, i, j)
		}
		if got := ticketIDOf(data); !bytes.Equal(got, data[i:j]) {
			t.Fatalf("ticketIDOf %q, ticketIDAt %q", got, data[i:j])
		}
	})
}

func newTestBackend(l *load, index int) *backend {
	return &backend{l: l, index: index, waiters: map[string]chan note{}, early: map[string]note{}, earlier: map[string]note{},
		rotated: time.Now()}
}
