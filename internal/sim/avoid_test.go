package sim

import (
	"context"
	"testing"
)

// With half the players avoiding one of the four nearest in skill, the queue's pass makes
// no match that holds a player and one he avoids, and the lists hold some anchors
// (waiting_on avoid); the matcher that ignores them ("none": arrival order) makes such
// matches, so the count is not vacuous.
func TestAvoidListsInTheQueue(t *testing.T) {
	t.Parallel()
	sc, err := Preset("live")
	if err != nil {
		t.Fatal(err)
	}
	sc.Matches, sc.Sweep = 3000, nil
	if raceDetector || testing.Short() {
		sc.Matches = 1000
	}
	sc.Avoid = &AvoidDist{Fraction: 0.5, Near: 4}
	sc.Configurations = sc.Configurations[:2] // no matchmaking, thesis default (the tick)
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	none, err := Run(context.Background(), &sc, sc.Configurations[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	queue, err := Run(context.Background(), &sc, sc.Configurations[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if queue.Avoiders < sc.Population.Players/3 || queue.AvoidBroken != 0 || queue.WaitingOn["avoid"] == 0 {
		t.Fatalf("the queue: %d avoiders, %d matches broke a list, %d anchors held by the lists", queue.Avoiders, queue.AvoidBroken, queue.WaitingOn["avoid"])
	}
	if none.AvoidBroken == 0 {
		t.Fatalf("no matchmaking: %d of %d matches broke a list, want some", none.AvoidBroken, len(none.Matches))
	}
	t.Logf("the queue: %d avoiders, %d anchors held by the lists; no matchmaking: %d of %d matches broke one",
		queue.Avoiders, queue.WaitingOn["avoid"], none.AvoidBroken, len(none.Matches))
}

func TestAvoidValidation(t *testing.T) {
	t.Parallel()
	for _, d := range []AvoidDist{{Fraction: -0.1}, {Fraction: 1.5}, {Fraction: 0.1, Near: -1}} {
		sc, _ := Preset("live")
		sc.Avoid = &d
		if err := sc.Validate(); err == nil {
			t.Fatalf("avoid %+v: valid", d)
		}
	}
}
