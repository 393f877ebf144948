package league

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestLeaguesAreWhatTheySay: the same seed gives the same matches, every result is valid, and
// each league has the shape its documentation promises.
func TestLeaguesAreWhatTheySay(t *testing.T) {
	t.Parallel()
	uneven := map[string]int{} // matches whose teams differ in players present (in time)
	for _, name := range Names() {
		cfg, err := ByName(name, 7)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Matches = 2000
		ms := Simulate(cfg)
		if !reflect.DeepEqual(ms, Simulate(cfg)) {
			t.Fatalf("%s: two runs of one seed differ", name)
		}
		games := map[string]int{}
		commanded := 0
		for _, m := range ms {
			r := m.Result
			if err := r.Validate(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !(m.PTrue > 0 && m.PTrue < 1) {
				t.Fatalf("%s: p = %v", name, m.PTrue)
			}
			var size [2]float64 // players present, counted in time
			for ti, team := range r.Teams {
				for _, p := range team.Players {
					games[p.ID]++
					size[ti] += (p.LeftS - p.JoinedS) / r.DurationS
					if p.CommanderS > 0 {
						commanded++
					}
				}
			}
			if math.Round(size[0]) != math.Round(size[1]) {
				uneven[name]++
			}
		}
		perPlayer := float64(len(ms)*2*cfg.TeamSize) / float64(len(games))
		t.Logf("%s: %d players, %.1f matches each, %d of %d matches with more players present on one side, %d commanders",
			name, len(games), perPlayer, uneven[name], len(ms), commanded)
		switch name {
		case "default":
			if len(games) != cfg.Players || commanded < len(ms) {
				t.Errorf("default: %d players, %d commanders", len(games), commanded)
			}
		case "pro": // fixed teams: a match's starters are one of a few lineups, bar transfers
			lineups := map[string]bool{}
			for _, m := range ms {
				for _, team := range m.Result.Teams {
					var ids []string
					for _, p := range team.Players {
						if p.JoinedS == 0 {
							ids = append(ids, p.ID)
						}
					}
					slices.Sort(ids)
					lineups[strings.Join(ids, ",")] = true
				}
			}
			if len(lineups) > len(ms)/4 {
				t.Errorf("pro: %d different lineups in %d matches", len(lineups), len(ms))
			}
		case "newcomers":
			if perPlayer > 8 || commanded != 0 {
				t.Errorf("newcomers: %.1f matches a player, %d commanders", perPlayer, commanded)
			}
		case "casual", "casual4": // most players play fewer than six matches, beside regulars who play on
			few, most := 0, 0
			for _, n := range games {
				if n < 6 {
					few++
				}
				most = max(most, n)
			}
			if 4*few < 3*len(games) || most < 100 || commanded != 0 {
				t.Errorf("%s: %d of %d players with fewer than six matches, at most %d matches a player, %d commanders",
					name, few, len(games), most, commanded)
			}
		}
	}
	// Both have leavers who are not replaced; the newcomers league also starts uneven teams.
	if uneven["newcomers"] < 3*uneven["default"]/2 {
		t.Errorf("uneven matches: %v", uneven)
	}
	if _, err := ByName("nba", 1); err == nil {
		t.Error("unknown league: want an error")
	}
}
