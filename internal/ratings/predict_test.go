package ratings_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// A prediction is what POST /v1/results would serve as the match's pre-match win
// probability, for every model: after a history of results, each proposal is predicted, then
// recorded as a result, and the receipt's probability must be the prediction's, bit for bit.
// Predicting writes nothing.
func TestPredictIsWhatRecordWouldServe(t *testing.T) {
	t.Parallel()
	cfg := league.Default(3)
	cfg.Matches = 300
	history := league.Results(league.Simulate(cfg))
	// The league's results have late joiners and commanders: a proposal has neither, so every
	// fifth result is made a full-time match, once, before the models' subtests share it.
	for i, r := range history {
		if i%5 != 0 {
			continue
		}
		for ti := range r.Teams {
			for pi, pl := range r.Teams[ti].Players {
				r.Teams[ti].Players[pi] = ratings.Player{ID: pl.ID, Bot: pl.Bot, LeftS: r.DurationS}
			}
		}
	}
	for _, name := range ratings.ModelNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := ratings.ModelByName(name)
			if err != nil {
				t.Fatal(err)
			}
			store := ratings.NewMemoryStore(nil)
			svc := ratings.NewService(store, m)
			// One moment for every call: a prediction at another would see another idle drift.
			svc.SetClock(func() time.Time { return time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC) })
			ctx := context.Background()
			for i, r := range history {
				// Every fifth result, made full-time above, is predicted first.
				if i%5 == 0 {
					p := proposalOf(r)
					pred, err := svc.Predict(ctx, p)
					if err != nil {
						t.Fatalf("result %d: %v", i, err)
					}
					again, err := svc.Predict(ctx, p)
					if err != nil || !reflect.DeepEqual(again, pred) {
						t.Fatalf("result %d: a second prediction differs (%v): predicting wrote something", i, err)
					}
					rc, err := svc.Record(ctx, r)
					if err != nil {
						t.Fatal(err)
					}
					if pred.WinProbability != rc.Outcome.WinProbability || pred.Model != name || !pred.Context.Equal(rc.Context) {
						t.Fatalf("result %d: predicted %v by %s in %s, recorded %v in %s", i, pred.WinProbability, pred.Model, pred.Context, rc.Outcome.WinProbability, rc.Context)
					}
					if q := 1 - abs(pred.WinProbability[0]-pred.WinProbability[1]); pred.Quality != q || q < 0 || q > 1 {
						t.Fatalf("quality %v, want %v", pred.Quality, q)
					}
					for ti, team := range pred.Teams {
						for _, pp := range team {
							if pp.Uncertainty <= 0 || pp.Rating.Games != rc.Outcome.Updates[indexOf(rc.Outcome.Updates, pp.Participant)].Before.Games {
								t.Fatalf("team %d: %+v", ti, pp)
							}
						}
					}
					continue
				}
				if _, err := svc.Record(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func proposalOf(r ratings.Result) ratings.Proposal {
	p := ratings.Proposal{GameType: r.GameType, Mutators: r.Mutators, Map: r.Map}
	for _, t := range r.Teams {
		pt := ratings.ProposedTeam{Side: t.Side}
		for _, pl := range t.Players {
			if pl.Bot != "" {
				pt.Bots = append(pt.Bots, pl.Bot)
			} else {
				pt.Players = append(pt.Players, pl.ID)
			}
		}
		p.Teams = append(p.Teams, pt)
	}
	return p
}

func indexOf(ups []ratings.Update, p ratings.Participant) int {
	for i, u := range ups {
		if u.Participant == p {
			return i
		}
	}
	panic(fmt.Sprintf("%v not in the receipt", p))
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// An unknown participant is a newcomer: not rated, the prior's uncertainty; players are
// listed before bots, each in the request's order.
func TestPredictNewcomers(t *testing.T) {
	t.Parallel()
	svc := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultKalman())
	pred, err := svc.Predict(context.Background(), ratings.Proposal{GameType: "ctf", Map: "face", Teams: []ratings.ProposedTeam{
		{Side: "red", Players: []string{"zed", "amy"}, Bots: []string{"Jakob"}},
		{Side: "blue", Players: []string{"bob"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if pred.WinProbability[0] <= 0.5 || pred.Model != "ns2-kalman" || pred.Context.Key() != "ctf" {
		t.Fatalf("three against one: %+v", pred)
	}
	var order []string
	for _, pp := range pred.Teams[0] {
		order = append(order, pp.Participant.String())
		if pp.Rated || pp.Uncertainty != ratings.DefaultKalman().SkillSD || pp.Rating.Games != 0 {
			t.Errorf("newcomer %+v", pp)
		}
	}
	if want := []string{"player:zed", "player:amy", "bot:Jakob"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
}

// Without sides or a map, the prediction has no side bias and no per-map record.
func TestPredictWithoutSidesOrMap(t *testing.T) {
	t.Parallel()
	svc := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	ctx := context.Background()
	for i := range 20 { // red wins everything on face
		r := ctfResult(fmt.Sprintf("m%d", i), 0)
		r.Teams = []ratings.Team{storetest.Team("red", fmt.Sprintf("r%d", i)), storetest.Team("blue", fmt.Sprintf("b%d", i))}
		if _, err := svc.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	predict := func(sides [2]string, mapName string) float64 {
		pred, err := svc.Predict(ctx, ratings.Proposal{GameType: "ctf", Map: mapName, Teams: []ratings.ProposedTeam{
			{Side: sides[0], Players: []string{"x"}}, {Side: sides[1], Players: []string{"y"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return pred.WinProbability[0]
	}
	onFace, anyMap, unknownSides := predict([2]string{"red", "blue"}, "face"), predict([2]string{"red", "blue"}, ""), predict([2]string{}, "face")
	if !(onFace > anyMap && anyMap > 0.5) || unknownSides != 0.5 {
		t.Errorf("red on face %v, red on any map %v, no sides %v: want face > any > 1/2 = no sides", onFace, anyMap, unknownSides)
	}
}

func TestPredictNamesTheFaultyFields(t *testing.T) {
	t.Parallel()
	svc := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	team := func(side string, players []string, bots ...string) ratings.ProposedTeam {
		return ratings.ProposedTeam{Side: side, Players: players, Bots: bots}
	}
	for _, tc := range []struct {
		name   string
		p      ratings.Proposal
		fields []string
	}{
		{"one team", ratings.Proposal{GameType: "ctf", Teams: []ratings.ProposedTeam{team("", []string{"a"})}}, []string{"teams"}},
		{"three teams", ratings.Proposal{GameType: "ctf", Teams: []ratings.ProposedTeam{team("", []string{"a"}), team("", []string{"b"}), team("", []string{"c"})}}, []string{"teams"}},
		{"no game type", ratings.Proposal{Teams: []ratings.ProposedTeam{team("", []string{"a"}), team("", []string{"b"})}}, []string{"context.game_type"}},
		{"bad mutator", ratings.Proposal{GameType: "ctf", Mutators: []string{"x y"}, Teams: []ratings.ProposedTeam{team("", []string{"a"}), team("", []string{"b"})}}, []string{"context.mutators[0]"}},
		{"empty team", ratings.Proposal{GameType: "ctf", Teams: []ratings.ProposedTeam{team("", nil), team("", []string{"b"})}}, []string{"teams[0].players"}},
		{"same side", ratings.Proposal{GameType: "ctf", Teams: []ratings.ProposedTeam{team("Red", []string{"a"}), team("red", []string{"b"})}}, []string{"teams[1].side"}},
		{"bad ids", ratings.Proposal{GameType: "ctf", Teams: []ratings.ProposedTeam{team("", []string{"a", ""}), team("", []string{"b"}, "x\x00")}}, []string{"teams[0].players[1].id", "teams[1].bots[0].name"}},
		{"twice", ratings.Proposal{GameType: "ctf", Teams: []ratings.ProposedTeam{team("", []string{"a"}, "a"), team("", []string{"b", "a"}, "a")}}, []string{"teams[1].players[1].id", "teams[1].bots[0].name"}},
		{"one side", ratings.Proposal{GameType: "ctf", Teams: []ratings.ProposedTeam{team("red", []string{"a"}), team("", []string{"b"})}}, []string{"teams[1].side"}},
		{"bad map", ratings.Proposal{GameType: "ctf", Map: strings.Repeat("m", 200), Teams: []ratings.ProposedTeam{team("", []string{"a"}), team("", []string{"b"})}}, []string{"map"}},
	} {
		_, err := svc.Predict(context.Background(), tc.p)
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.Invalid {
			t.Errorf("%s: %v, want Invalid", tc.name, err)
			continue
		}
		var got []string
		for _, fe := range e.Fields {
			got = append(got, fe.Field)
		}
		if !reflect.DeepEqual(got, tc.fields) {
			t.Errorf("%s: fields %q, want %q (%v)", tc.name, got, tc.fields, err)
		}
	}
}
