package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func postPredict(t testing.TB, h http.Handler, body string, headers ...string) *http.Response {
	t.Helper()
	return exchange(t, h, http.MethodPost, "/v1/predict", "application/json", body, headers...)
}

// predictBody proposes the teams of resultBody (everyone playing throughout).
const predictBody = `{"context":{"game_type":"ctf","mutators":["instagib"]},"map":"ctf-face","teams":[
	{"side":"red","players":[{"id":"alice"},{"id":"bob"}]},
	{"side":"blue","players":[{"id":"carol"},{"id":"dave"}],"bots":[{"name":"Jakob"}]}]}`

// A prediction answers what the result of the same match would be served, changes nothing,
// and lists every participant with its rating and uncertainty, in the request's order.
func TestPredictAnswersWhatTheResultWouldServe(t *testing.T) {
	t.Parallel()
	h, store := openServer(t)
	for i := range 6 {
		if resp := postResult(t, h, resultBody(fmt.Sprintf("m%d", i), i%3%2)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("result %d: %d", i, resp.StatusCode)
		}
	}
	c, _ := ratings.NewContext("ctf", nil)
	before, err := store.Ratings(t.Context(), c, []ratings.Participant{{ID: "alice"}, {ID: "Jakob", Bot: true}})
	if err != nil {
		t.Fatal(err)
	}

	resp := postPredict(t, h, predictBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %+v", resp.StatusCode, readProblem(t, resp))
	}
	var got predictResponse
	decodeJSON(t, resp, &got)
	if got.Model != "ns2-kalman" || got.Context.Key != "ctf" || len(got.Teams) != 2 || got.DrawProbability != nil {
		t.Fatalf("prediction %+v", got)
	}
	p := [2]float64{got.Teams[0].WinProbability, got.Teams[1].WinProbability}
	if got.Quality != 1-abs(p[0]-p[1]) {
		t.Errorf("quality %v for %v", got.Quality, p)
	}
	var ids []string
	for _, team := range got.Teams {
		for _, pr := range append(team.Players, team.Bots...) {
			ids = append(ids, pr.ID+pr.Name)
			if !pr.Known || pr.Games != 6 || pr.Uncertainty <= 0 || pr.Uncertainty >= ratings.DefaultKalman().SkillSD {
				t.Errorf("%s%s: %+v, want known after 6 games, less uncertain than a newcomer", pr.ID, pr.Name, pr)
			}
		}
	}
	if want := "alice bob carol dave Jakob"; strings.Join(ids, " ") != want {
		t.Errorf("participants %q, want %q", ids, want)
	}
	after, err := store.Ratings(t.Context(), c, []ratings.Participant{{ID: "alice"}, {ID: "Jakob", Bot: true}})
	if err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a prediction changed the ratings: %v -> %v (%v)", before, after, err)
	}

	// The same teams' result, everyone there throughout: the receipt's probability is p.
	body := `{"match_id":"next","context":{"game_type":"ctf","mutators":["instagib"]},"map":"ctf-face","duration_s":1200,"teams":[
		{"side":"red","players":[{"id":"alice"},{"id":"bob"}]},
		{"side":"blue","players":[{"id":"carol"},{"id":"dave"},{"bot":"Jakob"}]}],"winner":0}`
	rec := postResult(t, h, body)
	var receipt resultResponse
	decodeJSON(t, rec, &receipt)
	if receipt.WinProbability != p {
		t.Errorf("predicted %v, the result was served %v", p, receipt.WinProbability)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestPredictNewcomersAndOptionalSidesAndMap(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	resp := postPredict(t, h, `{"context":{"game_type":"tdm"},"teams":[{"players":[{"id":"a"},{"id":"b"}]},{"bots":[{"name":"x"}]}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %+v", resp.StatusCode, readProblem(t, resp))
	}
	var got predictResponse
	decodeJSON(t, resp, &got)
	if got.Teams[0].WinProbability <= 0.5 || len(got.Teams[1].Players) != 0 || len(got.Teams[1].Bots) != 1 {
		t.Fatalf("two against one: %+v", got)
	}
	if b := got.Teams[1].Bots[0]; b.Known || b.Name != "x" || b.Uncertainty != ratings.DefaultKalman().SkillSD || b.Games != 0 {
		t.Errorf("a newcomer bot: %+v", b)
	}
}

func TestPredictNamesTheFaultyField(t *testing.T) {
	t.Parallel()
	h, _ := openServer(t)
	for _, tc := range []struct {
		body  string
		field string
	}{
		{`{"teams":[{"players":[{"id":"a"}]},{"players":[{"id":"b"}]}]}`, "context.game_type"},
		{`{"context":{"game_type":"ctf"},"teams":[{"players":[{"id":"a"}]}]}`, "teams"},
		{`{"context":{"game_type":"ctf"},"teams":[{"players":[{"id":"a"}]},{}]}`, "teams[1].players"},
		{`{"context":{"game_type":"ctf"},"teams":[{"players":[{"id":"a"}]},{"players":[{"id":"a  b"}]}]}`, "teams[1].players[0].id"},
		{`{"context":{"game_type":"ctf"},"teams":[{"players":[{"id":"a"}]},{"bots":[{"name":""}]}]}`, "teams[1].bots[0].name"},
		{`{"context":{"game_type":"ctf"},"teams":[{"players":[{"id":"a"}]},{"players":[{"id":"a"}]}]}`, "teams[1].players[0].id"},
		{`{"context":{"game_type":"ctf"},"teams":[{"side":"red","players":[{"id":"a"}]},{"players":[{"id":"b"}]}]}`, "teams[1].side"},
		{`{"context":{"game_type":"ctf"},"teams":[{"side":"red","players":[{"id":"a"}]},{"side":"RED","players":[{"id":"b"}]}]}`, "teams[1].side"},
		{`{"context":{"game_type":"ctf"},"teams":[{"players":[{"id":"a","weight":50}]},{"players":[{"id":"b"}]}]}`, "teams[0].players[0].weight"},
		{`{"context":{"game_type":"ctf"},"teams":[{"players":[{"id":7}]},{"players":[{"id":"b"}]}]}`, "teams[0].players[0].id"},
		{`{"context":{"game_type":"ctf"},"teams":{}}`, "teams"},
	} {
		resp := postPredict(t, h, tc.body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", tc.body, resp.StatusCode)
			continue
		}
		if p := readProblem(t, resp); !hasField(p, tc.field) {
			t.Errorf("%s: problem %+v does not name %s", tc.body, p, tc.field)
		}
	}
}

func TestPredictNeedsAKeyWithTheMatchScope(t *testing.T) {
	t.Parallel()
	keys, err := ParseAPIKeys("matcher:match:" + HashKey("m-key") + ",reader:read:" + HashKey("r-key") + ",reporter:results:" + HashKey("w-key"))
	if err != nil {
		t.Fatal(err)
	}
	h := NewServer(Deps{Auth: &Auth{Keys: keys}})
	for _, c := range []struct {
		key  string
		want int
	}{{"", 401}, {"Bearer r-key", 403}, {"Bearer w-key", 403}, {"Bearer m-key", 200}} {
		var headers []string
		if c.key != "" {
			headers = []string{"Authorization", c.key}
		}
		if resp := postPredict(t, h, predictBody, headers...); resp.StatusCode != c.want {
			t.Errorf("with %q: %d, want %d", c.key, resp.StatusCode, c.want)
		}
	}
}

// FuzzPredict feeds /v1/predict arbitrary bodies: a 200 or a 4xx problem that validates
// against the spec, never a 5xx or a panic.
func FuzzPredict(f *testing.F) {
	f.Add(predictBody)
	f.Add(`{"context":{"game_type":"tdm"},"teams":[{"players":[{"id":"a"}]},{"bots":[{"name":"b"}]}]}`)
	f.Add(`{"context":{"game_type":"tdm","mutators":["x","X"]},"map":"","teams":[{"side":"a","players":[]},{"side":"b","bots":[{"name":"a"}],"players":[{"id":"a"}]}]}`)
	f.Add(`{"teams":null}`)
	h, _ := openServer(f)
	postResult(f, h, resultBody("m1", 0))
	f.Fuzz(func(t *testing.T, body string) {
		if resp := postPredict(t, h, body); resp.StatusCode >= 500 {
			t.Fatalf("status %d for %q", resp.StatusCode, body)
		}
	})
}
