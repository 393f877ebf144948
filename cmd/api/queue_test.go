package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
)

// A game backend's whole round trip through the running program, with the generated client:
// define a 2v2 queue, queue a party of two and two solo players, long-poll the assignments the
// real tick pass makes, read the match, and post its result under the match's id. On the
// in-memory stores and on Postgres.
func TestQueueRoundTripThroughTheProgram(t *testing.T) {
	t.Parallel()
	for name, env := range map[string]func(*testing.T) map[string]string{
		"memory":   func(*testing.T) map[string]string { return map[string]string{} },
		"postgres": func(t *testing.T) map[string]string { return map[string]string{"DATABASE_URL": dbtest.URL(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := env(t)
			e["MATCHMAKER_AUTH"] = "off"
			p := startProgram(t, e)
			defer p.stop()
			queueRoundTrip(t, p.base)
		})
	}
}

func queueRoundTrip(t *testing.T, base string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(base, "")
	if err != nil {
		t.Fatal(err)
	}
	two, tick := int32(2), int32(50)
	q, err := c.PutQueueWithResponse(ctx, "duo", client.QueueDefinition{Context: client.Context{GameType: "ctf"}, TeamSize: &two, TickMs: &tick})
	if err != nil || q.JSON201 == nil {
		t.Fatalf("put queue: %v %d %s", err, q.StatusCode(), q.Body)
	}
	rating := func(r float64) *float64 { return &r }
	requests := [][]client.TicketRequestPlayer{
		{{Id: "alice", Rating: rating(1000)}, {Id: "bob", Rating: rating(1040)}},
		{{Id: "carol", Rating: rating(1010)}},
		{{Id: "dave", Rating: rating(1030)}},
	}
	var ids []string
	for i, players := range requests {
		key := fmt.Sprintf("ticket-%d", i)
		resp, err := c.CreateTicketWithResponse(ctx, "duo", &client.CreateTicketParams{IdempotencyKey: &key}, client.TicketRequest{Players: players})
		if err != nil || resp.JSON201 == nil {
			t.Fatalf("create ticket %d: %v %d %s", i, err, resp.StatusCode(), resp.Body)
		}
		ids = append(ids, resp.JSON201.Id)
	}
	wait := 20.0
	var matchID string
	team := map[string]int32{}
	for _, id := range ids {
		resp, err := c.GetTicketWithResponse(ctx, id, &client.GetTicketParams{WaitS: &wait})
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("long-poll %s: %v %d %s", id, err, resp.StatusCode(), resp.Body)
		}
		tk := resp.JSON200
		if tk.Status != "matched" || tk.Assignment == nil {
			t.Fatalf("ticket %s after the wait: %s", id, tk.Status)
		}
		if matchID != "" && tk.Assignment.MatchId != matchID {
			t.Fatalf("the four players were split over matches %s and %s", matchID, tk.Assignment.MatchId)
		}
		matchID = tk.Assignment.MatchId
		for _, p := range tk.Players {
			team[p.Id] = tk.Assignment.Team
		}
	}
	if team["alice"] != team["bob"] || team["carol"] != team["dave"] || team["alice"] == team["carol"] {
		t.Fatalf("teams %v: the party of two fills one team, the two solo players the other", team)
	}
	m, err := c.GetMatchWithResponse(ctx, matchID)
	if err != nil || m.JSON200 == nil || len(m.JSON200.Teams) != 2 || len(m.JSON200.Pairs) != 2 {
		t.Fatalf("match: %v %s", err, m.Body)
	}
	var teams []client.ResultTeam
	for i, mt := range m.JSON200.Teams {
		rt := client.ResultTeam{Side: []string{"red", "blue"}[i]}
		for _, pl := range mt.Players {
			rt.Players = append(rt.Players, client.ResultParticipant{Id: &pl.Id})
		}
		teams = append(teams, rt)
	}
	winner := int32(0)
	res, err := c.RecordResultWithResponse(ctx, client.ResultRequest{MatchId: matchID, Context: client.Context{GameType: "ctf"},
		Map: "ctf-face", DurationS: 900, Teams: teams, Winner: &winner})
	if err != nil || res.JSON201 == nil || len(res.JSON201.Updates) != 4 {
		t.Fatalf("result: %v %d %s", err, res.StatusCode(), res.Body)
	}
}
