package tick_test

import (
	"fmt"
	"math"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// One pass of a 2v2 queue at t = 100 s: a party of two and three solos; one solo's ticket
// has expired. The party has waited longest and anchors; the interval is 25 for a new
// ticket and 50 after 10 s.
func ExampleRun() {
	never := math.Inf(1)
	tickets := []matchpool.Ticket{
		{Ratings: []float64{1010, 990}, WaitingSince: 80, ExpiresAt: never}, // waited 20 s: 50
		{Ratings: []float64{1040}, WaitingSince: 95, ExpiresAt: never},      // 5 s: 25, 40 away
		{Ratings: []float64{1030}, WaitingSince: 85, ExpiresAt: never},      // 15 s: 50
		{Ratings: []float64{980}, WaitingSince: 90, ExpiresAt: never},       // 10 s: 50
		{Ratings: []float64{1000}, WaitingSince: 70, ExpiresAt: 100},        // expired
	}
	res, err := tick.Run(tickets, 100, matchrules.Config{
		TeamSize: 2,
		Interval: []matchrules.Step{{AfterS: 0, Value: 25}, {AfterS: 10, Value: 50}},
	})
	if err != nil {
		panic(err)
	}
	for _, m := range res.Matches {
		fmt.Println("tickets", m.Tickets, "teams", m.Teams, "skill difference", m.SkillDifference)
		for _, p := range m.Pairs {
			fmt.Println("  pair", p.Players, "difference", p.Difference)
		}
	}
	fmt.Println("expired", res.Expired)
	// Output:
	// tickets [0 3 2] teams [[{0 1} {0 0}] [{3 0} {2 0}]] skill difference 10
	//   pair [{0 1} {3 0}] difference 10
	//   pair [{0 0} {2 0}] difference 20
	// expired [{4 ttl}]
}
