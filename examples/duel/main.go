// Command duel is the queue's five steps through the Go client: a 1v1 queue, two players'
// tickets, the wait for their match, the match, and its result. It talks to the service at
// MATCHMAKER_URL (default http://localhost:8080) with the API key in KEY (scopes admin, match
// and results):
//
//	KEY=... go run ./examples/duel
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/matchmakerhq/matchmaker/client"
)

func main() {
	ctx := context.Background()
	base := os.Getenv("MATCHMAKER_URL")
	if base == "" {
		base = "http://localhost:8080"
	}
	c, err := client.New(base, os.Getenv("KEY"))
	if err != nil {
		log.Fatal(err)
	}
	// 1. A 1v1 queue (admin scope).
	must(c.PutQueueWithResponse(ctx, "duel", client.QueueDefinition{
		Context: client.Context{GameType: "ctf"}, TeamSize: new(int32(1)), TickMs: new(int32(200))}))
	// 2. Two players queue (match scope).
	var tickets []string
	for _, p := range []client.TicketRequestPlayer{{Id: "alice", Rating: new(1010.0)}, {Id: "bob", Rating: new(990.0)}} {
		t := must(c.CreateTicketWithResponse(ctx, "duel", nil, client.TicketRequest{Players: []client.TicketRequestPlayer{p}}))
		tickets = append(tickets, t.JSON201.Id)
	}
	// 3. Wait for alice's match (WaitForMatch long-polls her ticket until it is matched, or
	// says why it ended: expired, cancelled).
	t, err := client.WaitForMatch(ctx, c, tickets[0])
	if err != nil {
		log.Fatal(err)
	}
	a := t.Assignment
	// 4. The match: who plays whom.
	fmt.Printf("match %s: %v against %v\n", a.MatchId, a.Teams[0].Players, a.Teams[1].Players)
	// 5. Its result, under the match's id (results scope): team 0 won.
	var teams []client.ResultTeam
	for i, side := range []string{"red", "blue"} {
		team := client.ResultTeam{Side: side}
		for _, id := range a.Teams[i].Players {
			team.Players = append(team.Players, client.ResultParticipant{Id: &id})
		}
		teams = append(teams, team)
	}
	res := must(c.RecordResultWithResponse(ctx, client.ResultRequest{MatchId: a.MatchId,
		Context: client.Context{GameType: "ctf"}, Map: "ctf-face", DurationS: 600, Teams: teams, Winner: new(int32(0))}))
	for _, u := range res.JSON201.Updates {
		fmt.Printf("%s: weight %.1f after %d game(s)\n", *u.Id, u.Weight, u.Games)
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
