package ratings_test

import (
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// smurfLeague is the newcomers league in 2v2 (so that the model's skills are on the truth's
// scale), a newcomer playing about 50 matches, one in ten of them a smurf of skill 4 (two
// spreads above the mean).
func smurfLeague(seed uint64) league.Config {
	cfg := league.Newcomers(seed)
	cfg.TeamSize, cfg.Uneven, cfg.Newcomers, cfg.Smurfs, cfg.SmurfSkill = 2, 0, 0.02, 0.1, 4
	return cfg
}

// smurfReport is how a model places a league's smurfs: over the smurfs with at least 10
// games, the mean of the games each took to reach his level (a skill within one logit of
// his true one; one who never did counts his games), how many did, how many were flagged,
// and how many of the other newcomers were flagged.
type smurfReport struct {
	smurfs, reached, flagged int
	games                    float64
	newcomers, falseFlags    int
}

func measureSmurfs(t *testing.T, m ratings.Kalman, ms []league.Match, skill float64) smurfReport {
	t.Helper()
	var st ratings.State
	reached := map[string]int{} // the games at which each smurf first reached his level
	flagged := map[string]bool{}
	for i, sm := range ms {
		o, err := st.Apply(m, sm.Result)
		if err != nil {
			t.Fatalf("match %d: %v", i, err)
		}
		for _, u := range o.Updates {
			id := u.Participant.ID
			if m.SuspectedSmurf(u.After) {
				flagged[id] = true
			}
			if _, ok := reached[id]; !ok && strings.HasPrefix(id, "s") && u.After.Skill >= skill-1 {
				reached[id] = u.After.Games
			}
		}
	}
	var rep smurfReport
	for p, r := range st.Ratings {
		switch {
		case strings.HasPrefix(p.ID, "n"):
			rep.newcomers++
			if flagged[p.ID] {
				rep.falseFlags++
			}
		case strings.HasPrefix(p.ID, "s") && r.Games >= 10:
			rep.smurfs++
			g, ok := reached[p.ID]
			if ok {
				rep.reached++
			} else {
				g = r.Games
			}
			rep.games += float64(g)
			if flagged[p.ID] {
				rep.flagged++
			}
		}
	}
	return rep
}

func (r *smurfReport) add(o smurfReport) {
	r.smurfs += o.smurfs
	r.reached += o.reached
	r.flagged += o.flagged
	r.games += o.games
	r.newcomers += o.newcomers
	r.falseFlags += o.falseFlags
}

// TestSmurfDetector: on a league with smurfs the detector (the default) brings them to their
// level in fewer games than the model without it, flags some of them and few of the other
// newcomers, at a small cost in log loss. docs/ratings.md has the figures:
//
//	go test -run TestSmurfDetector -v ./internal/ratings
func TestSmurfDetector(t *testing.T) {
	t.Parallel()
	off := ratings.DefaultKalman()
	off.SmurfGames = 0
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	var with, without smurfReport
	var llWith, llWithout float64
	for _, seed := range seeds {
		cfg := smurfLeague(seed)
		ms := league.Simulate(cfg)
		with.add(measureSmurfs(t, ratings.DefaultKalman(), ms, cfg.SmurfSkill))
		without.add(measureSmurfs(t, off, ms, cfg.SmurfSkill))
		llWith += evalModel(t, ratings.DefaultKalman(), ms, cfg.Matches/5).LogLoss / float64(len(seeds))
		llWithout += evalModel(t, off, ms, cfg.Matches/5).LogLoss / float64(len(seeds))
	}
	perSmurf := func(r smurfReport) float64 { return r.games / float64(max(r.smurfs, 1)) }
	t.Logf("%d smurfs with 10+ games, %d other newcomers, %d seeds", with.smurfs, with.newcomers, len(seeds))
	t.Logf("with the detector:    %.1f games to their level (%d reached it), %d flagged, %d other newcomers flagged, log loss %.4f",
		perSmurf(with), with.reached, with.flagged, with.falseFlags, llWith)
	t.Logf("without the detector: %.1f games to their level (%d reached it), log loss %.4f", perSmurf(without), without.reached, llWithout)
	if !(perSmurf(with) < perSmurf(without)) || with.reached <= without.reached || with.flagged == 0 ||
		with.falseFlags*20 > with.newcomers || llWith > llWithout+0.002 {
		t.Errorf("the detector does not place smurfs sooner at little cost: %+v against %+v, log loss %.4f against %.4f", with, without, llWith, llWithout)
	}
}
