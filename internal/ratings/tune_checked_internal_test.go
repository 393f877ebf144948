package ratings

import (
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// The self-tuning checks its history once (checkedHistory), and a candidate's replay of a
// result so checked does not check it again (it was two thirds of each replayed Apply:
// BenchmarkTune1v1); an invalid result is still the search's error, naming it.
func TestATunedHistoryIsCheckedOnce(t *testing.T) {
	t.Parallel()
	winner := 0
	duel := func(id string) Result {
		return Result{MatchID: id, GameType: "duel", Map: "m", DurationS: 600, Winner: &winner, Teams: []Team{
			{Side: "red", Players: []Player{{ID: "alice", LeftS: 600}}}, {Side: "blue", Players: []Player{{ID: "bob", LeftS: 600}}}}}
	}
	bad := duel("m2")
	bad.DurationS = -1
	_, err := checkedHistory([]Result{duel("m1"), bad})
	if apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), `history result 1 (match "m2")`) {
		t.Fatalf("a history with an invalid result: %v", err)
	}
	if _, err := Tune(DefaultKalman(), []Result{duel("m1"), bad}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("a tune of it: %v", err)
	}
	h, err := checkedHistory([]Result{duel("m1")})
	if err != nil {
		t.Fatal(err)
	}
	h[0].DurationS = -1 // changed after its check, as nothing in the package does: not checked again
	if _, err := DefaultKalman().Apply(nil, BiasTable{}, h[0]); err != nil {
		t.Fatalf("a checked result was checked again: %v", err)
	}
	if _, err := DefaultKalman().Apply(nil, BiasTable{}, bad); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("an unchecked invalid result: %v", err)
	}
}
