package ratings

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

func validResult() Result {
	return Result{
		MatchID: "m-1", GameType: "ns2", Mutators: []string{"NoCheat", "instagib"}, Map: "ns2_summit", DurationS: 1200,
		Teams: []Team{
			{Side: "marines", Players: []Player{{ID: "a", LeftS: 1200, CommanderS: 600}, {ID: "b", JoinedS: 100, LeftS: 900}}},
			{Side: "aliens", Players: []Player{{ID: "c", LeftS: 1200}, {Bot: "Jakob", LeftS: 1200}}},
		},
		Winner: intp(1),
	}
}

// fields returns the field names of an Invalid error.
func fields(t *testing.T, err error) []string {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.Invalid {
		t.Fatalf("err = %v, want an invalid *apperr.Error", err)
	}
	var out []string
	for _, f := range e.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestValidateAcceptsAValidResult(t *testing.T) {
	r := validResult()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	r.Winner = nil // a draw
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	p := func(team, slot int) func(r *Result) *Player {
		return func(r *Result) *Player { return &r.Teams[team].Players[slot] }
	}
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name   string
		mutate func(r *Result)
		want   []string
	}{
		{"missing match id", func(r *Result) { r.MatchID = "" }, []string{"match_id"}},
		{"match id too long", func(r *Result) { r.MatchID = strings.Repeat("x", 129) }, []string{"match_id"}},
		{"match id with a space at the end", func(r *Result) { r.MatchID = "ab " }, []string{"match_id"}},
		{"missing game type", func(r *Result) { r.GameType = "" }, []string{"context.game_type"}},
		{"game type too long", func(r *Result) { r.GameType = strings.Repeat("g", 65) }, []string{"context.game_type"}},
		{"game type charset", func(r *Result) { r.GameType = "tdm+x" }, []string{"context.game_type"}},
		{"mutator charset", func(r *Result) { r.Mutators = []string{"ok", "bad name"} }, []string{"context.mutators[1]"}},
		{"empty mutator", func(r *Result) { r.Mutators = []string{""} }, []string{"context.mutators[0]"}},
		{"too many mutators", func(r *Result) { r.Mutators = make([]string, 65) }, []string{"context.mutators"}},
		{"missing map", func(r *Result) { r.Map = "" }, []string{"map"}},
		{"map with a control character", func(r *Result) { r.Map = "ns2\x00" }, []string{"map"}},
		{"map not UTF-8", func(r *Result) { r.Map = "\xff" }, []string{"map"}},
		{"zero duration", func(r *Result) { r.DurationS = 0 }, []string{"duration_s"}},
		{"NaN duration", func(r *Result) { r.DurationS = nan }, []string{"duration_s"}},
		{"duration over a week", func(r *Result) { r.DurationS = MaxDurationS + 1 }, []string{"duration_s"}},
		{"one team: unknown side count", func(r *Result) { r.Teams = r.Teams[:1] }, []string{"teams"}},
		{"three teams: unknown side count", func(r *Result) { r.Teams = append(r.Teams, Team{Side: "x", Players: []Player{{ID: "z", LeftS: 1}}}) }, []string{"teams"}},
		{"no teams", func(r *Result) { r.Teams = nil }, []string{"teams"}},
		{"missing side", func(r *Result) { r.Teams[0].Side = "" }, []string{"teams[0].side"}},
		{"side charset", func(r *Result) { r.Teams[1].Side = "a/b" }, []string{"teams[1].side"}},
		{"sides equal", func(r *Result) { r.Teams[1].Side = "Marines" }, []string{"teams[1].side"}},
		{"empty team", func(r *Result) { r.Teams[1].Players = nil }, []string{"teams[1].players"}},
		{"team too large", func(r *Result) {
			r.Teams[0].Players = make([]Player, MaxTeamSize+1)
		}, []string{"teams[0].players"}},
		{"nobody present on a team", func(r *Result) {
			for i := range r.Teams[1].Players {
				r.Teams[1].Players[i].JoinedS = 1200
			}
		}, []string{"teams[1].players"}},
		{"winner out of range", func(r *Result) { r.Winner = intp(2) }, []string{"winner"}},
		{"negative winner", func(r *Result) { r.Winner = intp(-1) }, []string{"winner"}},
		{"neither id nor bot", func(r *Result) { p(0, 1)(r).ID = "" }, []string{"teams[0].players[1].id"}},
		{"both id and bot", func(r *Result) { p(1, 1)(r).ID = "jakob" }, []string{"teams[1].players[1].bot"}},
		{"id too long", func(r *Result) { p(0, 0)(r).ID = strings.Repeat("i", 129) }, []string{"teams[0].players[0].id"}},
		{"id with white space", func(r *Result) { p(0, 0)(r).ID = "a\tb" }, []string{"teams[0].players[0].id"}},
		{"bot name with two spaces", func(r *Result) { p(1, 1)(r).Bot = "Bot  Jakob" }, []string{"teams[1].players[1].bot"}},
		{"unicode space in id", func(r *Result) { p(0, 0)(r).ID = "a\u00a0b" }, []string{"teams[0].players[0].id"}},
		{"left before joined", func(r *Result) { p(0, 1)(r).LeftS = 50 }, []string{"teams[0].players[1].left_s"}},
		{"negative joined", func(r *Result) { p(0, 1)(r).JoinedS = -1 }, []string{"teams[0].players[1].joined_s"}},
		{"NaN joined", func(r *Result) { p(0, 1)(r).JoinedS = nan }, []string{"teams[0].players[1].joined_s"}},
		{"infinite left", func(r *Result) { p(1, 0)(r).LeftS = inf }, []string{"teams[1].players[0].left_s"}},
		{"left beyond duration", func(r *Result) { p(1, 0)(r).LeftS = 1201 }, []string{"teams[1].players[0].left_s"}},
		{"joined beyond duration", func(r *Result) { p(0, 1)(r).JoinedS = 1300; p(0, 1)(r).LeftS = 1300 }, []string{"teams[0].players[1].joined_s", "teams[0].players[1].left_s"}},
		{"negative commander time", func(r *Result) { p(0, 0)(r).CommanderS = -1 }, []string{"teams[0].players[0].commander_s"}},
		{"NaN commander time", func(r *Result) { p(0, 0)(r).CommanderS = nan }, []string{"teams[0].players[0].commander_s"}},
		{"commanding longer than present", func(r *Result) { p(0, 1)(r).CommanderS = 801 }, []string{"teams[0].players[1].commander_s"}},
		{"player twice on a team", func(r *Result) { p(0, 1)(r).ID = "a" }, []string{"teams[0].players[1].id"}},
		{"player on both teams", func(r *Result) { p(1, 0)(r).ID = "b" }, []string{"teams[1].players[0].id"}},
		{"bot on both teams", func(r *Result) { p(0, 1)(r).ID = ""; p(0, 1)(r).Bot = "Jakob" }, []string{"teams[1].players[1].bot"}},
		{"several faults at once", func(r *Result) { r.MatchID = ""; r.Map = ""; r.Winner = intp(5) }, []string{"match_id", "map", "winner"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validResult()
			tt.mutate(&r)
			got := fields(t, r.Validate())
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("fields = %q, want %q (error: %v)", got, tt.want, r.Validate())
			}
		})
	}
}

func TestValidateAllowsTheEdges(t *testing.T) {
	r := validResult()
	r.Teams[0].Players[1] = Player{ID: "b", JoinedS: 1200, LeftS: 1200}                // present for no time
	r.Teams[1].Players[0] = Player{ID: "c", JoinedS: 0, LeftS: 1200, CommanderS: 1200} // commands throughout
	r.Teams[1].Players[1] = Player{ID: "Jakob", LeftS: 1200}                           // a player named like a bot
	r.Teams[1].Players = append(r.Teams[1].Players, Player{Bot: "Jakob", LeftS: 1})    // and the bot
	r.MatchID = strings.Repeat("é", 64)
	r.Map = "DM-Deck 17 ][" // spaces are fine in map names
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

// A result whose team barely played is refused when it is recorded (CheckPresence), and
// still replays (Validate) when it is in the history already.
func TestCheckPresenceRefusesATeamThatBarelyPlayed(t *testing.T) {
	week := 7 * 24 * 3600.0
	r := Result{MatchID: "m", GameType: "ctf", Map: "m", DurationS: week, Winner: intp(1), Teams: []Team{
		{Side: "red", Players: []Player{{ID: "a", LeftS: week}}},
		{Side: "blue", Players: []Player{{ID: "b", LeftS: 1e-300}}},
	}}
	if err := r.Validate(); err != nil {
		t.Fatalf("Validate: %v (the history's rule)", err)
	}
	if err := r.CheckPresence(); !hasFieldErr(err, "teams[1].players") {
		t.Fatalf("CheckPresence: %v, want a fault naming teams[1].players", err)
	}
	r.Teams[1].Players[0].LeftS = week / 10
	if err := r.CheckPresence(); err != nil {
		t.Fatalf("a team present a tenth of the match: %v", err)
	}
}

func hasFieldErr(err error, field string) bool {
	var e *apperr.Error
	if !errors.As(err, &e) {
		return false
	}
	for _, f := range e.Fields {
		if f.Field == field {
			return true
		}
	}
	return false
}
