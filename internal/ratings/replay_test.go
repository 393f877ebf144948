package ratings

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestReplayIsDeterministic(t *testing.T) {
	cfg := defaultLeague(99)
	cfg.warmup, cfg.scored = 1000, 0
	ms := simulateLeague(cfg)
	history := make([]Result, len(ms))
	for i, m := range ms {
		history[i] = m.r
	}
	m := DefaultModel()
	a, err := Replay(m, history)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Replay(m, history)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Bias.Entries(), b.Bias.Entries()) || a.Matches != len(history) {
		t.Fatal("bias tables differ between two replays")
	}
	for _, p := range a.Participants() {
		if x, y := a.Ratings[p], b.Ratings[p]; math.Float64bits(x.Skill) != math.Float64bits(y.Skill) || x != y {
			t.Fatalf("%v: %+v vs %+v", p, x, y)
		}
	}
	// Applying one by one, as the service does, gives the same state as a rebuild.
	var live State
	for _, r := range history {
		if _, err := live.Apply(m, r); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(live.Ratings, a.Ratings) {
		t.Fatal("incremental updates and a replay disagree")
	}
	// The order of players inside each team does not matter either.
	for i := range history {
		for _, tm := range history[i].Teams {
			ps := tm.Players
			for l, r := 0, len(ps)-1; l < r; l, r = l+1, r-1 {
				ps[l], ps[r] = ps[r], ps[l]
			}
		}
	}
	c, err := Replay(m, history)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Ratings, a.Ratings) {
		t.Fatal("reversing the team lists changed the replay")
	}
}

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
