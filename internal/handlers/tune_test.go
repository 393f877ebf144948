package handlers

import (
	"context"
	"net/http"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// POST /v1/ratings/tune fits each context of the game type and answers what it found, in the
// spec's shape: accepted where the history is long enough and the defaults are off, defaults
// kept where it is too short.
func TestTuneFitsEachContext(t *testing.T) {
	t.Parallel()
	off := ratings.DefaultKalman()
	off.SkillSD, off.SkillDrift, off.BiasPrior = 0.5, 0.01, 1000
	store := ratings.NewMemoryStore(nil)
	svc := ratings.NewService(store, off)
	h := NewServer(Deps{Ratings: svc, Auth: &Auth{Off: true}})
	for _, r := range league.Results(league.Simulate(league.Default(1)))[:ratings.MinTuneResults] {
		if _, err := svc.Record(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if resp := postResult(t, h, resultBody("ctf-only", 0)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/results: %d", resp.StatusCode)
	}

	var got tuneResponse
	decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/ratings/tune?game_type=ns2", "", ""), &got)
	if len(got.Contexts) != 1 {
		t.Fatalf("tune ns2: %+v", got)
	}
	c := got.Contexts[0]
	if c.Context != "ns2" || c.Model != "ns2-kalman" || c.Results != ratings.MinTuneResults || !c.Accepted ||
		!(c.HeldOutAfter < c.HeldOutBefore) || c.Params == c.Default || c.Default != tunedParamsJSON(off.Tuned()) {
		t.Fatalf("tune ns2: %+v", c)
	}
	stored, err := svc.Tunings(context.Background(), "ns2")
	if err != nil || tunedParamsJSON(stored["ns2"].Params) != c.Params {
		t.Fatalf("stored tunings %+v %v, want %+v", stored, err, c.Params)
	}

	var listed tuneResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/ratings/tune?game_type=NS2", "", ""), &listed)
	if len(listed.Contexts) != 1 || listed.GameType != "ns2" || listed.Contexts[0].Params != c.Params || listed.Contexts[0].TunedAt == nil ||
		listed.Contexts[0].Auto || !listed.Contexts[0].Accepted || listed.Contexts[0].HeldOutAfter != c.HeldOutAfter {
		t.Fatalf("GET /v1/ratings/tune: %+v", listed)
	}
	decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/ratings/tune?game_type=CTF", "", ""), &got)
	if len(got.Contexts) != 1 || got.Contexts[0].Accepted || got.Contexts[0].Reason == "" || got.Contexts[0].Results != 1 {
		t.Fatalf("tune ctf (one result): %+v", got)
	}
	for _, path := range []string{"/v1/ratings/tune", "/v1/ratings/tune?game_type=no%20such"} {
		resp := exchange(t, h, http.MethodPost, path, "", "")
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d, want 400", path, resp.StatusCode)
		}
		if p := readProblem(t, resp); !hasField(p, "game_type") {
			t.Fatalf("%s: problem does not name game_type: %+v", path, p)
		}
	}
	if resp := exchange(t, NewServer(Deps{}), http.MethodPost, "/v1/ratings/tune?game_type=ns2", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no keys: %d, want 401", resp.StatusCode)
	}
}

// An ns2-mix context's tuning shows the mixture's memory beside its ns2-kalman's parameters:
// POST /v1/ratings/tune reports the model's own (memory 0.5) on a history too short to fit,
// and GET /v1/ratings/tune lists a stored fit's.
func TestTuneShowsTheMixturesMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := ratings.NewMemoryStore(nil)
	svc := ratings.NewService(store, ratings.DefaultMixture())
	h := NewServer(Deps{Ratings: svc, Auth: &Auth{Off: true}})
	if resp := postResult(t, h, resultBody("mix-1", 0)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/results: %d", resp.StatusCode)
	}
	var got tuneResponse
	decodeJSON(t, exchange(t, h, http.MethodPost, "/v1/ratings/tune?game_type=ctf", "", ""), &got)
	if len(got.Contexts) != 1 || got.Contexts[0].Model != "ns2-mix" || got.Contexts[0].Default.Memory != 0.5 ||
		got.Contexts[0].Default != tunedParamsJSON(ratings.DefaultMixture().Tuned()) || got.Contexts[0].Accepted {
		t.Fatalf("tune ctf (ns2-mix, one result): %+v", got)
	}
	p := ratings.DefaultMixture().Tuned()
	p.Memory, p.SkillSD = 2, 3
	c, _ := ratings.NewContext("ctf", nil)
	if err := store.SaveTunings(ctx, "ctf", []ratings.Tuning{{Context: c, Model: "ns2-mix", Params: p,
		Report: ratings.TuneReport{Results: 4000, Accepted: true, Default: ratings.DefaultMixture().Tuned(), Params: p}}}); err != nil {
		t.Fatal(err)
	}
	var listed tuneResponse
	decodeJSON(t, exchange(t, h, http.MethodGet, "/v1/ratings/tune?game_type=ctf", "", ""), &listed)
	if len(listed.Contexts) != 1 || listed.Contexts[0].Params.Memory != 2 || listed.Contexts[0].Params.SkillSD != 3 {
		t.Fatalf("GET /v1/ratings/tune: %+v", listed)
	}
}
