package evaluate

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// FuzzRead feeds both formats arbitrary bytes: Read never panics, and every valid result it
// reads survives WriteJSONL and a second Read unchanged.
func FuzzRead(f *testing.F) {
	f.Add([]byte("date,event,round,surface,team_a,team_b,winner,retired\n1,e,R16,Hard,1+2,3+4,0,0\n"), true)
	f.Add([]byte(`{"match_id":"m","context":{"game_type":"g","mutators":["x"]},"map":"m","duration_s":60,`+
		`"teams":[{"side":"a","players":[{"id":"p","left_s":30,"commander_s":10}]},{"side":"b","players":[{"bot":"B"}]}],"winner":null}`), false)
	f.Add([]byte("{}\n\n{\"winner\":1}"), false)
	f.Fuzz(func(t *testing.T, data []byte, atp bool) {
		format := "results-jsonl"
		if atp {
			format = "atp"
		}
		got, err := Read(bytes.NewReader(data), format)
		if err != nil {
			return
		}
		var valid []ratings.Result
		for _, r := range got {
			if r.Validate() == nil {
				if len(r.Mutators) == 0 {
					r.Mutators = nil // "mutators": [] and none at all are the same context
				}
				valid = append(valid, r)
			}
		}
		var b bytes.Buffer
		if err := WriteJSONL(&b, valid); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&b, "results-jsonl")
		if err != nil {
			t.Fatalf("reading what WriteJSONL wrote: %v", err)
		}
		if len(valid) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(again, valid) {
			t.Fatalf("round trip:\n%+v\n%+v", valid, again)
		}
	})
}
