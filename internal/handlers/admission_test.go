package handlers

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

func TestAdmissionChargesBySize(t *testing.T) {
	t.Parallel()
	a := newAdmitter(Admission{Budget: 100 << 20, Wait: 10 * time.Millisecond}, 8<<20)
	if got := a.cost(1000); got != minRequestCost {
		t.Errorf("a small body costs %d, want the minimum %d", got, minRequestCost)
	}
	if got := a.cost(1 << 20); got != 12<<20 {
		t.Errorf("a 1 MiB body costs %d, want 12 MiB", got)
	}
	if got := a.cost(-1); got != 96<<20 {
		t.Errorf("an unknown length costs %d, want the largest body's 96 MiB", got)
	}
	if got := newAdmitter(Admission{Budget: 50 << 20}, 8<<20).cost(8 << 20); got != 50<<20 {
		t.Errorf("a charge above the budget is %d, want the whole budget (the largest request can run alone)", got)
	}
	release, err := a.admit(context.Background(), 8<<20) // 96 MiB
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.admit(context.Background(), 1<<20); apperr.CodeOf(err) != apperr.Unavailable { // 12 more
		t.Fatalf("over the budget: %v, want Unavailable after the wait", err)
	}
	release()
	if release, err := a.admit(context.Background(), 1<<20); err != nil {
		t.Fatalf("room again: %v", err)
	} else {
		release()
	}
	free := newAdmitter(Admission{}, 8<<20)
	if release, err := free.admit(context.Background(), 8<<20); err != nil {
		t.Fatalf("a zero budget must mean no memory budget: %v", err)
	} else {
		release()
	}
}

// 32 concurrent maximum-size matchmakes (100,000 players) against a 256 MiB budget: every
// answer is a 200 or a 503 problem, and the heap stays far below what the burst took without
// admission control (docs/performance.md, "Admission").
func TestAdmissionKeepsABurstOfLargeRequestsInBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("a burst of 32 100,000-player requests")
	}
	const budget = 256 << 20
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(budget + 128<<20))
	limits := DefaultLimits()
	// The body deadline is lifted: 32 bodies of 100,000 players arriving at once over loopback
	// took more than the default 10 s on a loaded 2-core machine (a 400, which this test of the
	// memory budget is not about; the slow-body tests are).
	limits.Admission = Admission{Budget: budget, Wait: 2 * time.Second, BodyTimeout: 2 * time.Minute}
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.DiscardHandler), Limits: limits}))
	defer srv.Close()
	body := thesisQueueBody(100_000)

	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
		}
	}()
	var wg sync.WaitGroup
	codes := make([]int, 32)
	for i := range codes {
		wg.Go(func() {
			resp, err := http.Post(srv.URL+"/v1/matchmake", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("a 503 that is not a problem: %v", resp.Header)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	ok, refused := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Errorf("status %d", c)
		}
	}
	grew := int64(peak) - int64(base)
	t.Logf("32 concurrent 100,000-player matchmakes: %d answered, %d refused (503); heap objects peaked %d MiB above the %d MiB before",
		ok, refused, grew>>20, base>>20)
	if ok == 0 {
		t.Fatal("nothing was admitted")
	}
	if grew > 2*budget {
		t.Fatalf("the heap grew %d MiB for a %d MiB budget", grew>>20, budget>>20)
	}
}

// A ticket creation is charged to the compute requests' budget: with the budget held, it
// waits, then gets 503 with Retry-After; with room, it reaches its handler.
func TestAdmissionCoversTicketCreation(t *testing.T) {
	t.Parallel()
	a := newAdmitter(Admission{Budget: minRequestCost, Wait: 20 * time.Millisecond}, 1<<20)
	reached := 0
	create := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusCreated)
	})
	h := withAdmission(a, MaxTicketBodyBytes, slog.New(slog.DiscardHandler))(create)
	post := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/queues/duel/tickets", strings.NewReader(`{"players":[{"id":"ann"}]}`)))
		return rec
	}
	release, err := a.admit(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if rec := post(); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || reached != 0 {
		t.Fatalf("with the budget held: %d, Retry-After %q, handler reached %d times", rec.Code, rec.Header().Get("Retry-After"), reached)
	}
	release()
	if rec := post(); rec.Code != http.StatusCreated || reached != 1 {
		t.Fatalf("with room: %d, handler reached %d times", rec.Code, reached)
	}
	release, _ = a.admit(context.Background(), 10)
	defer release()
	rec := httptest.NewRecorder()
	withAdmission(nil, 0, nil)(create).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/queues/duel/tickets", nil))
	if rec.Code != http.StatusCreated {
		t.Fatalf("with no admission control: %d", rec.Code)
	}
}

// readUpTo reads a body in chunks of n bytes however the reader hands it over, and reads a
// body of the declared length into the buffer made for it, without growing it.
func TestReadUpToReadsChunksIntoTheBufferMadeForThem(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("0123456789"), 15_000)
	var got []byte
	r := iotest.OneByteReader(bytes.NewReader(body))
	for chunks := 0; ; chunks++ {
		var n int
		var err error
		if got, n, err = readUpTo(got, r, readChunk); err != nil {
			t.Fatal(err)
		}
		if n < readChunk {
			if chunks != len(body)/readChunk || !bytes.Equal(got, body) {
				t.Fatalf("%d full chunks, %d bytes read of %d", chunks, len(got), len(body))
			}
			break
		}
	}
	small := []byte(`{"players":[{"id":"a"}]}`)
	buf := make([]byte, 0, len(small)+1)
	out, n, err := readUpTo(buf, bytes.NewReader(small), readChunk)
	if err != nil || n != len(small) || !bytes.Equal(out, small) || cap(out) != len(small)+1 || &out[0] != &buf[:1][0] {
		t.Fatalf("a declared length: %d bytes, cap %d, err %v", n, cap(out), err)
	}
}
