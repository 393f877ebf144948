// Command readycheck is a competitive 5v5 from ticket to game server: a queue whose matches
// every player must accept within 20 s and whose game servers come from an allocator, ten
// players' tickets, each player's client accepting the proposed match, and the server each
// one is told to connect to. Run examples/allocator first, then this program with the
// allocator's URL and secret, against the service at MATCHMAKER_URL (default
// http://localhost:8080) with the API key in KEY (scopes admin and match). The service must
// be allowed to reach the allocator's address: for one on this machine, start it with
// MATCHMAKER_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8 (docs/operations.md, Security).
//
//	ALLOCATOR_URL=http://127.0.0.1:9090/allocate ALLOCATOR_SECRET=allocator-secret KEY=... go run ./examples/readycheck
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.New(cmp.Or(os.Getenv("MATCHMAKER_URL"), "http://localhost:8080"), os.Getenv("KEY"))
	if err != nil {
		log.Fatal(err)
	}
	// 1. The queue (admin scope): 5v5, a 20 s ready check, and the allocator, which has 30 s
	// to answer each match once its ten players accepted.
	q, err := c.PutQueueWithResponse(ctx, "ranked-ready", client.QueueDefinition{
		Context: client.Context{GameType: "ctf"}, TeamSize: new(int32(5)), TickMs: new(int32(200)),
		Acceptance: &client.Acceptance{TimeoutS: 20},
		Allocator: &client.Allocator{Url: cmp.Or(os.Getenv("ALLOCATOR_URL"), "http://127.0.0.1:9090/allocate"),
			Secret: new(cmp.Or(os.Getenv("ALLOCATOR_SECRET"), "allocator-secret")), TimeoutS: new(int32(30))}})
	if err != nil {
		log.Fatal(err)
	}
	if q.StatusCode()/100 != 2 { // e.g. a 400 naming allocator.url: an address the service may not reach
		log.Fatalf("defining the queue: the service answered %s: %s", q.Status(), q.Body)
	}

	// 2. Ten players queue alone (match scope), every rating within 25 of the others.
	players := []string{"ana", "ben", "cleo", "dan", "eva", "finn", "gus", "hana", "ines", "jon"}
	tickets := make([]string, len(players))
	for i, p := range players {
		t := must(c.CreateTicketWithResponse(ctx, "ranked-ready", nil, client.TicketRequest{
			Players: []client.TicketRequestPlayer{{Id: p, Rating: new(1000.0 + float64(2*i))}}}))
		tickets[i] = t.JSON201.Id
	}

	// 3. Each player's client follows its ticket to the end: when the tick proposes the match
	// it accepts (a real client shows the ready check and answers with the player's choice);
	// once all ten accepted the allocator is asked for a server (the ticket is placing) and
	// the ticket is matched with the connection in its assignment.
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed []error
	)
	for i, p := range players {
		wg.Go(func() {
			accept := func(t *client.Ticket) {
				if t.Status != client.TicketStatusProposed || t.Proposal == nil {
					return
				}
				r, err := c.AnswerProposalWithResponse(ctx, t.Proposal.MatchId, client.AcceptanceRequest{PlayerId: p, Accept: true})
				if err == nil && r.StatusCode()/100 != 2 {
					err = fmt.Errorf("the service answered %s: %s", r.Status(), r.Body)
				}
				if err != nil { // a 409: the proposal failed meanwhile; the next one is answered again
					log.Printf("%s could not accept match %s: %v", p, t.Proposal.MatchId, err)
				}
			}
			t, err := client.WaitForMatch(ctx, c, tickets[i], accept)
			if err == nil && (t.Assignment == nil || t.Assignment.Connection == nil) {
				err = errors.New("matched without a connection")
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", p, err))
				return
			}
			// 4. Where the player goes: the allocator's answer, as the service stored it.
			conn := *t.Assignment.Connection
			fmt.Printf("%s connects to %v:%v (match %s, team %d)\n", p, conn["address"], conn["port"], t.Assignment.MatchId, t.Assignment.Team)
		})
	}
	wg.Wait()
	if err := errors.Join(failed...); err != nil {
		log.Fatal(err)
	}
}

// must stops the program on a network error or an answer other than 2xx (a problem document).
func must[R interface {
	StatusCode() int
	Status() string
}](r R, err error) R {
	if err != nil {
		log.Fatal(err)
	}
	if code := r.StatusCode(); code < 200 || code > 299 {
		log.Fatalf("the service answered %s", r.Status())
	}
	return r
}
