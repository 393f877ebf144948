package ratings_test

import (
	"math"
	"reflect"
	"testing"

	"matchmaker/internal/apperr"
	"matchmaker/internal/ratings"
	"matchmaker/internal/ratings/league"
)

func TestModelByNameKnowsEveryName(t *testing.T) {
	t.Parallel()
	for _, name := range ratings.ModelNames() {
		m, err := ratings.ModelByName(name)
		if err != nil || m.Name() != name {
			t.Errorf("ModelByName(%q) = %v, %v", name, m, err)
		}
	}
	if _, err := ratings.ModelByName("glicko"); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("unknown model: err = %v, want invalid", err)
	}
	if ratings.DefaultModel().Name() != "ns2" {
		t.Errorf("default model %q, want ns2 until the store keeps the uncertainty", ratings.DefaultModel().Name())
	}
}

// TestReplayIsDeterministic holds every model to what a rebuild needs: two replays of one
// history give bit-identical ratings, applying results one by one gives what a replay gives,
// and the order of the players inside the teams changes nothing.
func TestReplayIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := league.Default(99)
	cfg.Matches = 1000
	ms := league.Simulate(cfg)
	for _, name := range ratings.ModelNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, _ := ratings.ModelByName(name)
			history := make([]ratings.Result, len(ms))
			for i, sm := range ms {
				history[i] = sm.Result
				history[i].Teams = []ratings.Team{sm.Result.Teams[0], sm.Result.Teams[1]}
			}
			a, err := ratings.Replay(m, history)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ratings.Replay(m, history)
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
			var live ratings.State
			for _, r := range history {
				if _, err := live.Apply(m, r); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(live.Ratings, a.Ratings) {
				t.Fatal("incremental updates and a replay disagree")
			}
			for i := range history {
				for ti, tm := range history[i].Teams {
					ps := make([]ratings.Player, len(tm.Players))
					for j, p := range tm.Players {
						ps[len(ps)-1-j] = p
					}
					history[i].Teams[ti].Players = ps
				}
			}
			c, err := ratings.Replay(m, history)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Ratings, a.Ratings) {
				t.Fatal("reversing the team lists changed the replay")
			}
		})
	}
}
