package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// stream is one connection to GET /v1/queues/{name}/events.
type stream struct {
	body     io.ReadCloser
	br       *bufio.Reader
	cancel   context.CancelFunc
	watchdog *time.Timer
	lastID   []byte // the id: of the last event read, for Last-Event-ID
}

// idle is how long a stream may stay silent before it is taken for dead: the service sends a
// keep-alive comment every 15 s.
const idle = 40 * time.Second

// errGone is a 410: the resume point is no longer kept.
var errGone = fmt.Errorf("410: resume point not kept")

// openStream connects to the queue's events on r, from after lastID (from now on when it is
// empty), and returns once the answer's headers are in (the service sends them at once).
func (l *load) openStream(ctx context.Context, key string, r *replica, lastID []byte, ticket string) (*stream, error) {
	sctx, cancel := context.WithCancel(ctx)
	u := r.base + "/v1/queues/" + l.queue + "/events"
	if ticket != "" {
		u += "?ticket=" + url.QueryEscape(ticket)
	}
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, u, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if len(lastID) > 0 {
		req.Header.Set("Last-Event-ID", string(lastID))
	}
	watchdog := time.AfterFunc(idle, cancel) // also bounds the wait for the headers
	resp, err := l.client.Do(req)
	if err != nil {
		watchdog.Stop()
		cancel()
		l.countFailure(ctx, sctx, "sse", err)
		return nil, err
	}
	l.count("sse", resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		watchdog.Stop()
		cancel()
		if resp.StatusCode == http.StatusGone {
			return nil, errGone
		}
		return nil, fmt.Errorf("events: %d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return &stream{body: resp.Body, br: bufio.NewReaderSize(resp.Body, 32<<10), cancel: cancel, watchdog: watchdog,
		lastID: append([]byte(nil), lastID...)}, nil
}

func (s *stream) close() {
	s.watchdog.Stop()
	s.cancel()
	s.body.Close()
}

// next returns the next event's data line (valid until the next call) and when it was read.
func (s *stream) next() ([]byte, time.Time, error) {
	for {
		line, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, time.Time{}, fmt.Errorf("events: a line longer than %d bytes", s.br.Size())
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		s.watchdog.Reset(idle)
		line = bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			s.lastID = append(s.lastID[:0], v...)
		} else if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			return v, time.Now(), nil
		}
	}
}

// eventJSON is what the soak reads of an event's data.
type eventJSON struct {
	Type     string    `json:"type"`
	TicketID string    `json:"ticket_id"`
	MatchID  string    `json:"match_id"`
	At       time.Time `json:"at"`
}

// sseTicket is an arrival that waits on a stream of its own, as a game client does: it opens
// the queue's stream (from now on), creates its ticket, and reads every event of the queue
// until its ticket's. A broken stream resumes from its last event id; one that cannot
// (no event read yet, or a 410) reopens from now on and reads the ticket once, so that an
// end it missed is seen.
//
// With -ticket-streams the ticket comes first: its stream (?ticket=) is opened once it
// exists, and the ticket read once for an end that came before the stream.
func (l *load) sseTicket(ctx, resultsCtx context.Context, key string, body []byte, first string, due time.Time) {
	var s *stream
	id, only := "", ""
	if l.c.ticketOnly {
		if id = l.create(ctx, key, body, first, due); id == "" {
			return
		}
		only = id
	}
	for attempt := 0; ; attempt++ {
		var err error
		if s, err = l.openStream(ctx, key, l.pick(), nil, only); err == nil {
			break
		}
		if attempt == 2 || ctx.Err() != nil {
			l.abandoned.Add(1)
			return
		}
		backoff(ctx, nil)
	}
	if only != "" && l.readTicket(ctx, resultsCtx, key, id) {
		s.close()
		return
	}
	if id == "" {
		if id = l.create(ctx, key, body, first, due); id == "" {
			s.close()
			return
		}
	}
	l.startWaiting()
	defer l.waiting.Add(-1)
	needle := []byte(`"ticket_id":"` + id + `"`)
	for ctx.Err() == nil {
		data, seen, err := s.next()
		if err == nil {
			if !bytes.Contains(data, needle) {
				continue
			}
			var e eventJSON
			if json.Unmarshal(data, &e) == nil && e.TicketID == id {
				s.close()
				l.finish(resultsCtx, key, outcome{status: e.Type, matchID: e.MatchID, at: e.At, seen: seen}, nil)
				return
			}
			continue
		}
		// The stream broke: resume from its last event; when it cannot (no event read yet, or
		// a 410), from now on, after reading the ticket once.
		last := s.lastID
		s.close()
		s = nil
		if ctx.Err() != nil {
			return
		}
		l.countBreak(err)
		for s == nil && ctx.Err() == nil {
			if len(last) > 0 {
				s, err = l.openStream(ctx, key, l.pick(), last, only)
				if err == errGone {
					last = nil
					continue
				}
			} else {
				s, err = l.openStream(ctx, key, l.pick(), nil, only)
				if err == nil && l.readTicket(ctx, resultsCtx, key, id) {
					s.close()
					return
				}
			}
			if err != nil {
				backoff(ctx, nil)
			}
		}
	}
	if s != nil {
		s.close()
	}
}

// readTicket reads the ticket once (GET /v1/tickets/{id}); it records its end and reports
// true if it is no longer searching.
func (l *load) readTicket(ctx, resultsCtx context.Context, key, id string) bool {
	st, b, _, err := l.do(ctx, key, "ticket", http.MethodGet, l.pick().base+"/v1/tickets/"+id, nil, l.c.timeout)
	seen := time.Now()
	if err != nil || st != http.StatusOK {
		return false
	}
	var t ticketJSON
	if json.Unmarshal(b, &t) != nil || t.Status == "" || t.Status == "searching" {
		return false
	}
	o, teams := t.ended(seen)
	l.finish(resultsCtx, key, o, teams)
	return true
}

// backend is a game backend process with one stream for all its tickets (-backends N): it
// hands each event to the ticket waiting for it.
type backend struct {
	l     *load
	index int
	key   string // the API key of the backend and of its tickets
	via   int    // 1 + the index of the replica its stream is on (run's), for the outcomes

	mu      sync.Mutex
	waiters map[string]chan note
	// early and earlier hold the events of tickets not registered here (another backend's,
	// or one of ours whose 201 has not arrived yet) as read, undecoded: every backend reads
	// every event, and only one ticket waits for it. An event is for a ticket whose creation
	// began before it was read and has not registered yet, so a generation of them is dropped
	// once every creation begun before it started has registered or given up: creating counts
	// the creations in flight by the generation they began in (gen's, and the one before).
	early, earlier map[string]note
	gen            int
	creating       [2]int
	rotated        time.Time
}

// note is an event for a waiting ticket (its data, decoded by the ticket), or, with resync,
// word that events may have been missed (the ticket reads itself).
type note struct {
	data   string
	seen   time.Time
	resync bool
}

// startBackends opens the backends' streams, each to a replica in turn, and keeps them
// reading until ctx ends.
func (l *load) startBackends(ctx context.Context) error {
	ready := make(chan error, l.c.backends)
	for i := range l.c.backends {
		b := &backend{l: l, index: i, key: l.keys[i%len(l.keys)], via: l.reps[i%len(l.reps)].index + 1, waiters: map[string]chan note{},
			early: map[string]note{}, earlier: map[string]note{}, rotated: time.Now()}
		l.backend = append(l.backend, b)
		go b.run(ctx, ready)
	}
	for range l.c.backends {
		select {
		case err := <-ready:
			if err != nil {
				return fmt.Errorf("a backend's stream did not open: %w", err)
			}
		case <-time.After(30 * time.Second):
			return fmt.Errorf("the backends' streams did not open within 30 s")
		}
	}
	return nil
}

func (b *backend) run(ctx context.Context, ready chan<- error) {
	r := b.l.reps[b.index%len(b.l.reps)]
	s, err := b.l.openStream(ctx, b.key, r, nil, "")
	ready <- err
	if err != nil {
		return
	}
	for ctx.Err() == nil {
		data, seen, err := s.next()
		if err == nil {
			b.dispatch(data, seen)
			continue
		}
		last := s.lastID
		s.close()
		s = nil
		if ctx.Err() != nil {
			return
		}
		b.l.countBreak(err)
		for s == nil && ctx.Err() == nil {
			if len(last) > 0 {
				s, err = b.l.openStream(ctx, b.key, r, last, "")
				if err == errGone {
					last = nil
					continue
				}
			} else if s, err = b.l.openStream(ctx, b.key, r, nil, ""); err == nil {
				b.resync() // events may have been missed: every waiting ticket reads itself
			}
			if err != nil {
				backoff(ctx, nil)
			}
		}
	}
	if s != nil {
		s.close()
	}
}

// ticketIDOf finds the ticket_id in an event's data without decoding it all.
func ticketIDOf(data []byte) []byte {
	i, j := ticketIDAt(data)
	if i < 0 {
		return nil
	}
	return data[i:j]
}

// ticketIDAt is where ticketIDOf's id is in data: data[i:j], or -1, -1.
func ticketIDAt(data []byte) (i, j int) {
	const key = `"ticket_id":"`
	i = bytes.Index(data, []byte(key))
	if i < 0 {
		return -1, -1
	}
	i += len(key)
	n := bytes.IndexByte(data[i:], '"')
	if n < 0 {
		return -1, -1
	}
	return i, i + n
}

func (b *backend) dispatch(data []byte, seen time.Time) {
	i, j := ticketIDAt(data)
	if i < 0 {
		return
	}
	id := data[i:j]
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch, waiting := b.waiters[string(id)]; waiting {
		delete(b.waiters, string(id))
		ch <- note{data: string(data), seen: seen}
		return
	}
	// At most once a second: a generation is a map of its own.
	if b.creating[(b.gen+1)%2] == 0 && seen.Sub(b.rotated) >= time.Second {
		b.early, b.earlier = make(map[string]note, len(b.early)), b.early
		b.gen++
		b.rotated = seen
	}
	d := string(data) // one copy, the key within it
	b.early[d[i:j]] = note{data: d, seen: seen}
}

// resync tells every waiting ticket to read itself: events may have been missed.
func (b *backend) resync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.waiters {
		select {
		case ch <- note{resync: true}:
		default:
		}
	}
}

// begin counts a creation of one of the backend's tickets, before it is sent; its
// generation is given back to wait once the ticket is created, or to end if it is not.
func (b *backend) begin() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.creating[b.gen%2]++
	return b.gen
}

// end is a creation that began in generation gen and gave up.
func (b *backend) end(gen int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.creating[gen%2]--
}

// wait waits for the ticket's event on the backend's stream; its creation began in
// generation gen.
func (b *backend) wait(ctx, resultsCtx context.Context, id string, gen int) {
	ch := make(chan note, 2)
	b.mu.Lock()
	b.creating[gen%2]--
	if n, ok := b.early[id]; ok {
		delete(b.early, id)
		ch <- n
	} else if n, ok := b.earlier[id]; ok {
		delete(b.earlier, id)
		ch <- n
	} else {
		b.waiters[id] = ch
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.waiters, id)
		b.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-ch:
			var e eventJSON
			if n.resync {
				if b.l.readTicket(ctx, resultsCtx, b.key, id) {
					return
				}
			} else if json.Unmarshal([]byte(n.data), &e) == nil && e.TicketID == id {
				b.l.finish(resultsCtx, b.key, outcome{status: e.Type, matchID: e.MatchID, at: e.At, seen: n.seen, via: b.via}, nil)
				return
			}
			// Still searching, or an event that does not read as its own: wait on.
			b.mu.Lock()
			b.waiters[id] = ch
			b.mu.Unlock()
		}
	}
}
