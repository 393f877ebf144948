package ratings_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
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
	if ratings.DefaultModel().Name() != "ns2-kalman" {
		t.Errorf("default model %q, want ns2-kalman", ratings.DefaultModel().Name())
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

func TestParseModelSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec     string
		want     string            // the set's String, "" for an error
		contexts map[string]string // context key -> model name
		errHas   string
	}{
		{spec: "", want: "default=" + ratings.DefaultModel().Name(), contexts: map[string]string{"ctf": ratings.DefaultModel().Name()}},
		{spec: "default=ns2", want: "default=ns2", contexts: map[string]string{"ctf+instagib": "ns2"}},
		{spec: " default = ns2-kalman , CTF=ns2 ,ctf+LowGrav+instagib=openskill-pl", want: "default=ns2-kalman,ctf=ns2,ctf+instagib+lowgrav=openskill-pl",
			contexts: map[string]string{"ctf": "ns2", "ctf+instagib": "ns2", "ctf+instagib,lowgrav": "openskill-pl", "tdm": "ns2-kalman", "tdm+instagib,lowgrav": "ns2-kalman"}},
		{spec: "tdm=openskill-bt", want: "default=" + ratings.DefaultModel().Name() + ",tdm=openskill-bt", contexts: map[string]string{"tdm+x": "openskill-bt"}},
		{spec: "default=elo", errHas: `unknown model "elo"`},
		{spec: "ctf", errHas: "want SCOPE=MODEL"},
		{spec: "=ns2", errHas: "want SCOPE=MODEL"},
		{spec: "ctf=", errHas: "want SCOPE=MODEL"},
		{spec: "c tf=ns2", errHas: "scope"},
		{spec: "ctf+=ns2", errHas: "scope"},
		{spec: "ctf=ns2,CTF=ns2-kalman", errHas: "given twice"},
		{spec: "ctf+a+b=ns2,ctf+b+a=ns2", errHas: "given twice"},
		{spec: "default=ns2,default=ns2", errHas: "given twice"},
	} {
		ms, err := ratings.ParseModelSet(tc.spec)
		if tc.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("ParseModelSet(%q) = %v, want an error with %q", tc.spec, err, tc.errHas)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseModelSet(%q): %v", tc.spec, err)
			continue
		}
		if got := ms.String(); got != tc.want {
			t.Errorf("ParseModelSet(%q).String() = %q, want %q", tc.spec, got, tc.want)
		}
		if again, err := ratings.ParseModelSet(ms.String()); err != nil || again.String() != ms.String() {
			t.Errorf("ParseModelSet(%q) does not read its own String: %v %v", ms.String(), again, err)
		}
		for key, name := range tc.contexts {
			c, err := ratings.ParseContextKey(key)
			if err != nil {
				t.Fatal(err)
			}
			if got := ms.For(c).Name(); got != name {
				t.Errorf("ParseModelSet(%q).For(%s) = %s, want %s", tc.spec, key, got, name)
			}
		}
	}
}

func TestModelSetSet(t *testing.T) {
	t.Parallel()
	ms := ratings.NewModelSet(ratings.DefaultNS2())
	if err := ms.Set("CTF+LowGrav+InstaGib", ratings.DefaultKalman()); err != nil {
		t.Fatal(err)
	}
	if err := ms.Set("ctf", ratings.DefaultWengLin(true)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "c tf", "ctf+", "+x"} {
		if err := ms.Set(bad, ratings.DefaultNS2()); err == nil {
			t.Errorf("Set(%q): no error", bad)
		}
	}
	if got := ms.String(); got != "default=ns2,ctf=openskill-pl,ctf+instagib+lowgrav=ns2-kalman" {
		t.Errorf("String() = %q", got)
	}
	if ms.Default().Name() != "ns2" {
		t.Errorf("Default() = %s", ms.Default().Name())
	}
}
