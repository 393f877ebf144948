package ratings

import (
	"reflect"
	"strings"
	"testing"
)

func TestReplayStopsAtAnInvalidResult(t *testing.T) {
	bad := handResult()
	bad.MatchID = "broken"
	bad.DurationS = -1
	_, err := Replay(DefaultModel(), []Result{handResult(), bad})
	if err == nil {
		t.Fatal("want an error")
	}
	if got := err.Error(); !strings.Contains(got, `history result 1 (match "broken")`) || !strings.Contains(got, "duration_s") {
		t.Errorf("error = %q", got)
	}
}

func TestReplayByContextSplitsOnGameplayMutators(t *testing.T) {
	plain := handResult()
	insta := handResult()
	insta.MatchID, insta.Mutators = "insta", []string{"InstaGib", "NoCheat"}
	cheat := handResult()
	cheat.MatchID, cheat.Mutators = "cheat", []string{"NoCheat"}
	history := []Result{plain, insta, cheat}

	var policy MutatorPolicy
	states, unknown, err := ReplayByContext(DefaultModel(), &policy, history)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 || states["ns2"].Matches != 3 || !reflect.DeepEqual(unknown, []string{"instagib", "nocheat"}) {
		t.Fatalf("unclassified: %d contexts, unknown %q", len(states), unknown)
	}
	// The admin says instagib changes the game: a rebuild re-splits the same history.
	_ = policy.Set("instagib", true)
	_ = policy.Set("nocheat", false)
	states, unknown, err = ReplayByContext(DefaultModel(), &policy, history)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states["ns2"].Matches != 2 || states["ns2+instagib"].Matches != 1 || unknown != nil {
		t.Fatalf("classified: %v, unknown %q", states, unknown)
	}
}
