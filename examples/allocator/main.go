// Command allocator stands in for a studio's game-server allocator: the service POSTs it each
// match a queue with an "allocator" makes (docs/queue.md, "With an allocator"), and it answers
// where the match is played. It checks each request's signature with the queue's allocator
// secret, as a webhook receiver does, and answers {"connection": {"address": "10.0.0.7",
// "port": 7777}} — port 7777 for its first match, 7778 for the next, and the same server again
// for a retry of a match it already placed (the delivery id is the match id). It listens on
// ALLOCATOR_ADDR (default 127.0.0.1:9090; port 0 picks a free one) with the secret in
// ALLOCATOR_SECRET (default allocator-secret), prints the URL to give the queue, and runs
// until interrupted:
//
//	ALLOCATOR_ADDR=127.0.0.1:9090 ALLOCATOR_SECRET=allocator-secret go run ./examples/allocator
//
// examples/readycheck defines a queue that uses it.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
)

// allocation is what the program reads of the service's request (an Allocation in
// api/openapi.yaml).
type allocation struct {
	MatchID string `json:"match_id"`
	Queue   string `json:"queue"`
	Teams   []struct {
		Players []struct {
			ID string `json:"id"`
		} `json:"players"`
	} `json:"teams"`
	Deadline time.Time `json:"deadline"`
}

// connection is where a match is played: the opaque object the service stores and hands to
// every player of the match in its ticket's assignment.
type connection struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
}

// servers hands out game servers, one per match, and remembers which match has which so that a
// retry gets the server the first request got.
type servers struct {
	mu     sync.Mutex
	byID   map[string]connection
	nextAt int
}

func (s *servers) allocate(matchID string) (connection, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.byID[matchID]; ok {
		return c, false
	}
	c := connection{Address: "10.0.0.7", Port: 7777 + s.nextAt}
	s.nextAt++
	s.byID[matchID] = c
	return c, true
}

func handle(secret string, s *servers) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an allocation", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		// The signature covers the raw body and the delivery id: check it before decoding.
		if err := client.VerifyWebhook(secret, r.Header, body, time.Now(), 0); err != nil {
			log.Printf("refused a request: %v", err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var a allocation
		if err := json.Unmarshal(body, &a); err != nil || a.MatchID == "" {
			http.Error(w, "not an allocation", http.StatusBadRequest)
			return
		}
		if a.MatchID != r.Header.Get(client.WebhookDeliveryHeader) {
			http.Error(w, "the delivery id is not the match id", http.StatusBadRequest)
			return
		}
		c, first := s.allocate(a.MatchID)
		if first {
			players := 0
			for _, t := range a.Teams {
				players += len(t.Players)
			}
			fmt.Printf("allocated %s:%d to match %s of queue %s (%d players, deadline %s)\n",
				c.Address, c.Port, a.MatchID, a.Queue, players, a.Deadline.Format(time.RFC3339))
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(map[string]connection{"connection": c}); err != nil {
			log.Printf("answering match %s: %v", a.MatchID, err)
		}
	}
}

func main() {
	log.SetFlags(0)
	addr := cmp.Or(os.Getenv("ALLOCATOR_ADDR"), "127.0.0.1:9090")
	secret := cmp.Or(os.Getenv("ALLOCATOR_SECRET"), "allocator-secret")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	// The URL to put in the queue's allocator (a test reads this line for the port it got).
	fmt.Printf("allocator listening on http://%s/allocate\n", ln.Addr())
	srv := &http.Server{Handler: handle(secret, &servers{byID: map[string]connection{}}), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
