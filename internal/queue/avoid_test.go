package queue_test

import (
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// The production pass keeps the players' avoid lists, in a 1v1: with scope
// match al, who avoids bo, waits on "avoid" and meets cy once cy comes; with scope team
// the pair plays on two teams; past optional_after_s the list binds no more.
func TestTickPassKeepsTheAvoidLists(t *testing.T) {
	t.Parallel()
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 1, 1
	t0 := queuetest.T0
	al := searching("al", t0, nil, pl("al", 1000))
	al.Players[0].Avoid = []string{"bo"}
	waiting := []queue.Ticket{al, searching("bo", t0.Add(time.Second), nil, pl("bo", 1001))}
	w, err := queue.TickPass{}.Match(q, waiting, t0.Add(5*time.Second))
	if err != nil || len(w.Matches) != 0 {
		t.Fatalf("al and bo: %+v %v", w, err)
	}
	if why, ok := w.Waiting.Of("al"); !ok || why.Rule != matchrules.WaitAvoid || why.Detail == "" {
		t.Fatalf("al waits on %+v, want avoid", why)
	}
	waiting = append(waiting, searching("cy", t0.Add(2*time.Second), nil, pl("cy", 1010)))
	if w, err = (queue.TickPass{}).Match(q, waiting, t0.Add(5*time.Second)); err != nil || len(w.Matches) != 1 ||
		!slices.Equal(w.Matches[0].Tickets(), []string{"al", "cy"}) {
		t.Fatalf("al, bo and cy: %+v %v, want al with cy", w.Matches, err)
	}
	q.Avoid.OptionalAfterS = new(4.0)
	if w, err = (queue.TickPass{}).Match(q, waiting[:2], t0.Add(5*time.Second)); err != nil || len(w.Matches) != 1 {
		t.Fatalf("past optional_after_s: %+v %v, want al with bo", w.Matches, err)
	}
	q.Avoid = matchrules.Avoid{Scope: matchrules.AvoidTeam}
	if w, err = (queue.TickPass{}).Match(q, waiting[:2], t0.Add(5*time.Second)); err != nil || len(w.Matches) != 1 {
		t.Fatalf("scope team, a 1v1: %+v %v, want al against bo", w.Matches, err)
	}
}

// A match function's proposals keep the avoid lists as the pass does: a 1v1 of al and bo,
// who al avoids, is rejected (avoid, naming them); with scope team a 2v2 with them on two
// teams is made and one with them on one team rejected; past optional_after_s both are
// made.
func TestFunctionProposalsKeepTheAvoidLists(t *testing.T) {
	t.Parallel()
	t0 := queuetest.T0
	al := searching("al", t0, nil, pl("al", 1000))
	al.Players[0].Avoid = []string{"bo"}
	pool := []queue.Ticket{al, searching("bo", t0, nil, pl("bo", 1000)),
		searching("cy", t0, nil, pl("cy", 1000)), searching("dee", t0, nil, pl("dee", 1000))}
	q := queue.DefaultQueue("q")
	q.TeamSize, q.MaxPartySize = 1, 1
	check := &queue.FunctionCheck{Queue: &q, Pool: pool[:2], Now: t0.Add(10 * time.Second)}
	made, rejected := check.Check([]queue.ProposedMatch{{Teams: [][]string{{"al"}, {"bo"}}}})
	if len(made) != 0 || len(rejected) != 1 || rejected[0].Reason != queue.RejectAvoid || rejected[0].Detail != `player "al" avoids "bo"` {
		t.Fatalf("a 1v1 of al and bo: made %v, rejected %+v", made, rejected)
	}
	q.TeamSize, q.Avoid = 2, matchrules.Avoid{Scope: matchrules.AvoidTeam}
	check.Pool = pool
	made, rejected = check.Check([]queue.ProposedMatch{{Teams: [][]string{{"al", "cy"}, {"bo", "dee"}}}})
	if len(made) != 1 || len(rejected) != 0 {
		t.Fatalf("scope team, al and bo on two teams: made %v, rejected %+v", made, rejected)
	}
	made, rejected = check.Check([]queue.ProposedMatch{{Teams: [][]string{{"al", "bo"}, {"cy", "dee"}}}})
	if len(made) != 0 || len(rejected) != 1 || rejected[0].Reason != queue.RejectAvoid {
		t.Fatalf("scope team, al and bo on one team: made %v, rejected %+v", made, rejected)
	}
	q.Avoid.OptionalAfterS = new(5.0)
	if made, rejected = check.Check([]queue.ProposedMatch{{Teams: [][]string{{"al", "bo"}, {"cy", "dee"}}}}); len(made) != 1 {
		t.Fatalf("past optional_after_s: made %v, rejected %+v", made, rejected)
	}
}
