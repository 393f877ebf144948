package resultjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// TestResultFillsTheServiceDefaults: a player without joined_s joined at 0, without left_s
// left at the end, without commander_s never commanded; a null winner is a draw.
func TestResultFillsTheServiceDefaults(t *testing.T) {
	t.Parallel()
	body := decodeBoth(t, `{"match_id":"m1","context":{"game_type":"ns2","mutators":["x"]},"map":"ns2_veil",
		"duration_s":600,"teams":[{"side":"marines","players":[{"id":"a","left_s":300,"commander_s":120}]},
		{"side":"aliens","players":[{"bot":"b1","joined_s":60}]}],"winner":null}`)
	got, err := body.Result()
	if err != nil {
		t.Fatal(err)
	}
	want := ratings.Result{MatchID: "m1", GameType: "ns2", Mutators: []string{"x"}, Map: "ns2_veil", DurationS: 600,
		Teams: []ratings.Team{
			{Side: "marines", Players: []ratings.Player{{ID: "a", LeftS: 300, CommanderS: 120}}},
			{Side: "aliens", Players: []ratings.Player{{Bot: "b1", JoinedS: 60, LeftS: 600}}},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Result:\n got %+v\nwant %+v", got, want)
	}
}

// TestResultNamesTheBodysFaults: the faults of the body itself come back as fields, each
// named; what only validation finds (here, no teams) is not this function's to report.
func TestResultNamesTheBodysFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		fields     []string
		winner     *int
	}{
		{"complete, team 1 won", `{"duration_s":60,"winner":1}`, nil, new(1)},
		{"a draw", `{"duration_s":60,"winner":null}`, nil, nil},
		{"no duration", `{"winner":0}`, []string{"duration_s"}, new(0)},
		{"no winner", `{"duration_s":60}`, []string{"winner"}, nil},
		{"winner not an index", `{"duration_s":60,"winner":"a"}`, []string{"winner"}, nil},
		{"winner a fraction", `{"duration_s":60,"winner":0.5}`, []string{"winner"}, nil},
		{"neither", `{}`, []string{"duration_s", "winner"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := decodeBoth(t, tc.body)
			r, err := body.Result()
			if got := faultFields(t, err); !reflect.DeepEqual(got, tc.fields) {
				t.Errorf("fields %q, want %q", got, tc.fields)
			}
			if !reflect.DeepEqual(r.Winner, tc.winner) {
				t.Errorf("winner %v, want %v", r.Winner, tc.winner)
			}
		})
	}
}

// TestFromResultIsShortAndReadsBack: FromResult leaves out what the defaults restore, and
// its body maps back to the same Result.
func TestFromResultIsShortAndReadsBack(t *testing.T) {
	t.Parallel()
	won := 0
	r := ratings.Result{MatchID: "m", GameType: "tdm", Map: "dust", DurationS: 900, Winner: &won,
		Teams: []ratings.Team{
			{Side: "red", Players: []ratings.Player{{ID: "a", LeftS: 900}, {ID: "b", JoinedS: 30, LeftS: 400, CommanderS: 5}}},
			{Side: "blue", Players: []ratings.Player{{Bot: "x", LeftS: 900}}},
		}}
	b, err := json.Marshal(FromResult(r))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"match_id":"m","context":{"game_type":"tdm"},"map":"dust","duration_s":900,"teams":[` +
		`{"side":"red","players":[{"id":"a"},{"id":"b","joined_s":30,"left_s":400,"commander_s":5}]},` +
		`{"side":"blue","players":[{"bot":"x"}]}],"winner":0}`
	if string(b) != want {
		t.Errorf("FromResult:\n got %s\nwant %s", b, want)
	}
	back, err := decodeBoth(t, string(b)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("read back:\n got %+v\nwant %+v", back, r)
	}
	draw := r
	draw.Winner = nil
	if b, _ := json.Marshal(FromResult(draw)); !strings.HasSuffix(string(b), `,"winner":null}`) {
		t.Errorf("a draw: %s, want winner null", b)
	}
}

// decodeBoth decodes s as the two readers do, the service strictly (go-json-experiment, as
// the handlers' decode) and a results file leniently (encoding/json), and checks they agree.
func decodeBoth(t *testing.T, s string) *Body {
	t.Helper()
	var strict, lenient Body
	if err := jsonv2.Unmarshal([]byte(s), &strict); err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	if err := json.Unmarshal([]byte(s), &lenient); err != nil {
		t.Fatalf("lenient decode: %v", err)
	}
	if !reflect.DeepEqual(strict, lenient) {
		t.Fatalf("the decoders disagree:\n%+v\n%+v", strict, lenient)
	}
	return &strict
}

func faultFields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.Invalid {
		t.Fatalf("error %v, want an apperr Invalid", err)
	}
	var out []string
	for _, f := range e.Fields {
		out = append(out, f.Field)
	}
	return out
}
