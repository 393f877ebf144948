package sim

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func TestPresetsRoundTripThroughJSON(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"thesis", "live", "rules", "ready"} {
		sc, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ReadScenario(bytes.NewReader(sc.JSON()))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, sc.JSON())
		}
		if !reflect.DeepEqual(sc, back) {
			t.Errorf("%s: the JSON reads back as\n%+v\nnot\n%+v", name, back, sc)
		}
	}
	if _, err := Preset("nope"); err == nil {
		t.Error("unknown preset: no error")
	}
}

func TestReadScenarioRejectsMistakes(t *testing.T) {
	t.Parallel()
	sc, _ := Preset("live")
	good := string(sc.JSON())
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"unknown field", `"seed": 1,`, `"seed": 1, "sead": 2,`, "unknown field"},
		{"no matches", `"matches": 10000`, `"matches": 0`, "matches"},
		{"bad matcher", `"matcher": "none"`, `"matcher": "nobody"`, "matcher"},
		{"coefficient over 1", `"accuracy": 0.7072`, `"accuracy": 1.5`, "coefficients.accuracy"},
		{"bad distribution", `"kind": "uniform"`, `"kind": "zipf"`, "kind"},
		{"team too large", `"team_size": 5`, `"team_size": 17`, "team_size"},
		{"party larger than a team", `"party_sizes": [`, `"party_sizes": [1, 1, 1, 1, 1, 1, `, "party"},
		{"trailing data", "\n}\n", "\n}\n{}", "trailing"},
		{"unknown rating model", `"rating_model": "ns2-kalman"`, `"rating_model": "elo"`, "rating_model"},
	} {
		in := strings.Replace(good, tc.from, tc.to, 1)
		if in == good {
			t.Fatalf("%s: %q is not in the preset's JSON", tc.name, tc.from)
		}
		if _, err := ReadScenario(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestConfigurationValidation(t *testing.T) {
	t.Parallel()
	w := Widening{Initial: 25, Step: 25, EverySeconds: 5}
	c := Coefficients{Accuracy: 1}
	for _, tc := range []struct {
		cf Configuration
		ok bool
	}{
		{Configuration{Name: "a", Matcher: "pairing"}, true},
		{Configuration{Name: "a", Matcher: "pairing", Widening: &w, Expansions: &Expansions{Interval: []Step{{AfterS: 0, Value: 1}}}}, false},
		{Configuration{Name: "a", Matcher: "pairing", Expansions: &Expansions{}}, false},
		{Configuration{Name: "a", Matcher: "pairing", Expansions: &Expansions{Interval: []Step{{AfterS: 5, Value: 1}}}}, false},
		{Configuration{Name: "a", Matcher: "pairing", Expansions: &Expansions{Interval: []Step{{AfterS: 0, Value: 10}, {AfterS: 5, Value: 5}}}}, false},
		{Configuration{Name: "a", Matcher: "pairing", Strategy: "rating_window"}, true},
		{Configuration{Name: "a", Matcher: "pairing", Strategy: "best"}, false},
		{Configuration{Name: "a", Matcher: "pairing", Rating: "learned", Coefficients: &c}, false},
		{Configuration{Name: "a", Matcher: "pairing", Rating: "elo"}, false},
		{Configuration{Name: "a", Matcher: "none", TicketTTLS: -1}, false},
		{Configuration{Matcher: "none"}, false},
		{Configuration{Name: "a", Matcher: "tick"}, true},
		{Configuration{Name: "a", Matcher: "tick", Strategy: "rating_window", Widening: &w, TicketTTLS: 300}, true},
		{Configuration{Name: "a", Matcher: "tick", Strategy: "best"}, false},
		{Configuration{Name: "a", Matcher: "tick", Expansions: &Expansions{Interval: []Step{{AfterS: 0, Value: 10}, {AfterS: 5, Value: 5}}}}, false},
		{Configuration{Name: "a", Matcher: "tick", Expansions: &Expansions{Interval: steps(32)}}, true},
		{Configuration{Name: "a", Matcher: "tick", Expansions: &Expansions{Interval: steps(33)}}, false},
		{Configuration{Name: "a", Matcher: "pairing", Expansions: &Expansions{Interval: steps(33)}}, false},
		{Configuration{Name: "a", Matcher: "tick", Coefficients: &Coefficients{Accuracy: math.NaN()}}, false},
	} {
		if err := tc.cf.validate(&Scenario{TeamSize: 5}); (err == nil) != tc.ok {
			t.Errorf("%+v: validate = %v, want ok %v", tc.cf, err, tc.ok)
		}
	}
}

// steps is a valid schedule of n steps, one a second.
func steps(n int) []Step {
	out := make([]Step, n)
	for i := range out {
		out[i] = Step{AfterS: float64(i), Value: float64(25 * (i + 1))}
	}
	return out
}

// TestRatingModelIsTheServicesDefault: the presets name the service's default model, and a
// scenario that names none runs it too.
func TestRatingModelIsTheServicesDefault(t *testing.T) {
	t.Parallel()
	want := ratings.DefaultModel().Name()
	for _, name := range []string{"thesis", "live"} {
		sc, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if sc.RatingModel != want {
			t.Errorf("%s: rating_model %q, want the service's default %q", name, sc.RatingModel, want)
		}
		sc.RatingModel = ""
		if err := sc.Validate(); err != nil {
			t.Fatalf("%s without rating_model: %v", name, err)
		}
		if got, ok := sc.LearnedModel(); !ok || got != want {
			t.Errorf("%s without rating_model: LearnedModel = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range ratings.ModelNames() {
		sc, _ := Preset("thesis")
		sc.RatingModel = name
		if err := sc.Validate(); err != nil {
			t.Errorf("rating_model %q: %v", name, err)
		}
		if got, _ := sc.LearnedModel(); got != name {
			t.Errorf("rating_model %q runs %q", name, got)
		}
	}
	sc, _ := Preset("thesis")
	sc.Configurations = sc.Configurations[:1]
	if got, ok := sc.LearnedModel(); ok {
		t.Errorf("no learned configuration, yet LearnedModel = %q", got)
	}
}
