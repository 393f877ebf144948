// Command mmf is a queue whose matches come from the studio's own code: a match function
// (package clans) that keeps friends of a clan on one team, which the queue's built-in rules
// cannot say. It serves the function with the Go client's MatchFunctionHandler, defines a
// 3v3 queue whose match_function points at it, queues twelve players (three wolves alone,
// two ravens as a party and one alone, six without a clan), and prints each match. Run it
// against the service at MATCHMAKER_URL (default http://localhost:8080) with the API key in
// KEY (scopes admin and match). The function listens on MMF_ADDR (default 127.0.0.1:0, a
// free port); the service must be allowed to reach it: for one on this machine, start the
// service with MATCHMAKER_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8 (docs/operations.md, Security), or
// give the address the service reaches it at in MMF_URL. README.md says more.
//
//	KEY=... go run ./examples/mmf
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/examples/mmf/clans"
)

// player is one of the example's players: a ticket each, but for a party, which shares one.
type player struct {
	ids  []string
	clan string
}

var players = []player{
	{[]string{"ana"}, "wolves"}, {[]string{"ben"}, "wolves"}, {[]string{"cleo"}, "wolves"},
	{[]string{"dan", "eva"}, "ravens"}, {[]string{"fay"}, "ravens"},
	{[]string{"finn"}, ""}, {[]string{"gus"}, ""}, {[]string{"hana"}, ""},
	{[]string{"ines"}, ""}, {[]string{"jon"}, ""}, {[]string{"kim"}, ""},
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	secret := cmp.Or(os.Getenv("MMF_SECRET"), "match-function-secret")

	// 1. The function, served: the handler checks each call's signature and deadline and
	// answers what clans.Match proposes.
	ln, err := net.Listen("tcp", cmp.Or(os.Getenv("MMF_ADDR"), "127.0.0.1:0"))
	if err != nil {
		log.Fatal(err)
	}
	fn := func(ctx context.Context, req *client.MatchFunctionRequest) ([]client.ProposedMatch, error) {
		matches, err := clans.Match(ctx, req)
		if len(matches) > 0 {
			log.Printf("tick %d: %d ticket(s) in the pool, %d match(es) proposed", req.Tick, len(req.Pool), len(matches))
		}
		return matches, err
	}
	go func() { _ = http.Serve(ln, client.MatchFunctionHandler(secret, fn)) }()
	url := cmp.Or(os.Getenv("MMF_URL"), "http://"+ln.Addr().String()+"/match")

	// 2. The queue (admin scope): 3v3, tickets may name their clan, and the function makes
	// the matches (mode replace); when it fails, the tickets wait (on_failure wait).
	c, err := client.New(cmp.Or(os.Getenv("MATCHMAKER_URL"), "http://localhost:8080"), os.Getenv("KEY"))
	if err != nil {
		log.Fatal(err)
	}
	replace, wait := client.MatchFunctionModeReplace, client.MatchFunctionOnFailureWait
	q, err := c.PutQueueWithResponse(ctx, "clans", client.QueueDefinition{
		Context: client.Context{GameType: "ctf"}, TeamSize: new(int32(3)), TickMs: new(int32(200)),
		Attributes:    &map[string]client.AttributeDeclaration{clans.Attribute: {Type: client.String}},
		MatchFunction: &client.MatchFunction{Url: url, Secret: &secret, TimeoutMs: new(int32(1000)), Mode: &replace, OnFailure: &wait}})
	if err != nil {
		log.Fatal(err)
	}
	if q.StatusCode()/100 != 2 { // e.g. a 400 naming match_function.url: an address the service may not reach
		log.Fatalf("defining the queue: the service answered %s: %s", q.Status(), q.Body)
	}

	// 3. The players queue (match scope), each ticket with its clan; all within 25 of 1000.
	teamOf, matchOf := map[string]int32{}, map[string]string{}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed []error
	)
	for i, p := range players {
		req := client.TicketRequest{}
		for _, id := range p.ids {
			req.Players = append(req.Players, client.TicketRequestPlayer{Id: id, Rating: new(1000.0 + float64(2*i))})
		}
		if p.clan != "" {
			var v client.AttributeValue
			if err := v.FromAttributeString(p.clan); err != nil {
				log.Fatal(err)
			}
			req.Attributes = &map[string]client.AttributeValue{clans.Attribute: v}
		}
		t, err := c.CreateTicketWithResponse(ctx, "clans", nil, req)
		if err != nil || t.JSON201 == nil {
			log.Fatalf("queueing %v: %v %s", p.ids, err, body(t))
		}
		// 4. Each ticket followed to its match.
		wg.Go(func() {
			m, err := client.WaitForMatch(ctx, c, t.JSON201.Id)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && m.Assignment == nil {
				err = errors.New("matched without an assignment")
			}
			if err != nil {
				failed = append(failed, fmt.Errorf("%v: %w", p.ids, err))
				return
			}
			for _, id := range p.ids {
				teamOf[id], matchOf[id] = m.Assignment.Team, m.Assignment.MatchId
			}
		})
	}
	wg.Wait()
	if err := errors.Join(failed...); err != nil {
		log.Fatal(err)
	}
	report(teamOf, matchOf)
}

// report prints each match's teams, and stops the program if a clan played on two teams of
// one match.
func report(teamOf map[string]int32, matchOf map[string]string) {
	teams := map[string][2][]string{}
	for id, m := range matchOf {
		t := teams[m]
		t[teamOf[id]] = append(t[teamOf[id]], id)
		teams[m] = t
	}
	for _, m := range slices.Sorted(maps.Keys(teams)) {
		t := teams[m]
		slices.Sort(t[0])
		slices.Sort(t[1])
		fmt.Printf("match %s: %s against %s\n", m, strings.Join(t[0], " "), strings.Join(t[1], " "))
	}
	for _, p := range players {
		if p.clan == "" {
			continue
		}
		for _, q := range players {
			if q.clan == p.clan && matchOf[q.ids[0]] == matchOf[p.ids[0]] && teamOf[q.ids[0]] != teamOf[p.ids[0]] {
				log.Fatalf("clan %s on both teams of match %s: %s and %s", p.clan, matchOf[p.ids[0]], p.ids[0], q.ids[0])
			}
		}
	}
	fmt.Println("every clan played on one team")
}

func body(r *client.CreateTicketResponse) string {
	if r == nil {
		return ""
	}
	return r.Status() + ": " + string(r.Body)
}
