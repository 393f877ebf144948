package ratings

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-11*max(1, math.Abs(want)) {
		t.Errorf("%s = %.15g, want %.15g", what, got, want)
	}
}

func intp(i int) *int { return &i }

// handResult is a 2v2 on ns2_summit, 600 s long, with partial participation, a bot and a
// commander on each side.
func handResult() Result {
	return Result{
		MatchID: "hand-1", GameType: "ns2", Map: "ns2_summit", DurationS: 600,
		Teams: []Team{
			{Side: "marines", Players: []Player{
				{ID: "alice", JoinedS: 0, LeftS: 600, CommanderS: 600},
				{Bot: "Gorge", JoinedS: 300, LeftS: 600},
			}},
			{Side: "aliens", Players: []Player{
				{ID: "carol", JoinedS: 0, LeftS: 300, CommanderS: 300},
				{ID: "dave", JoinedS: 0, LeftS: 600},
			}},
		},
		Winner: intp(0),
	}
}

// TestApplyByHand checks one full update against numbers worked out from the seed's formulas.
//
// Model: B = 4.5, c = 0.1, a = 1, eps = 0.01, offset rate 1, k = 10, r = duration = 600, so
// a^-x = 2^(-x/300) and the participation weights are round numbers:
//
//	alice  marines  [0, 600]   t = 1 - 1/4   = 0.75   commands 600 s: c = 0.75
//	Gorge  marines  [300, 600] t = 1/2 - 1/4 = 0.25   (a bot, new: zero rating)
//	carol  aliens   [0, 300]   t = 1 - 1/2   = 0.5    commands 300 s: c = 0.5
//	dave   aliens   [0, 600]   t = 0.75
//
// sum t = 2.25, shares w = 1/3, 1/9, 2/9, 1/3; sum c = 1.25, command shares 0.6 and 0.4.
// Sides: "aliens" sorts first, so aliens are SideA (sigma = +1), marines SideB, and team 0 is
// on SideB: sigma_0 = -1. Effective skills s + sigma o:
//
//	alice 1.0 - 0.3 = 0.7, Gorge 0, carol -0.5 + (-0.2) = -0.7, dave 0.2 + 0.1 = 0.3.
//
// Skill term: 1/3 (4.5+0.7) + 1/9 (4.5+0) - 2/9 (4.5-0.7) - 1/3 (4.5+0.3)
//
//	= 13/45 + 4.5 (1/3 + 1/9 - 2/9 - 1/3) = 13/45 - 1/2 = -0.2111111...
//
// Commander term: 0.6 * 0.5 - 0.4 * 1.0 = -0.1.
// Bias: team sizes in presence (600+300)/600 = 1.5 each, rounded to 2: bucket 2. History:
// aliens won 3 of 4 in this cell and 12 of 20 over all maps, so
//
//	p_pair = (12 + 5) / (20 + 10) = 17/30, p_cell = (3 + 10 * 17/30) / (4 + 10) = 13/21,
//	F(aliens) = log(13/8) = 0.4855078..., and for team 0 (marines) F = -0.4855078...
//
// logit p0 = -0.2111111 - 0.1 - 0.4855078 = -0.7966189268928; p0 = 0.31074922735593.
// Team 0 wins: G = 1, G - p0 = d = 0.68925077264407.
//
//	alice  grad s = +d/3  = 0.229750257548;  g = 0.04 + grad^2 = 0.092785180843
//	       s = 1 + (0.1 + 1/sqrt(g + 0.01)) grad = 1.739598045569
//	       o = 0.3 + 1 * sigma_0 * d/3 = 0.070249742452 (won on marines: marine skill s-o rises)
//	       grad chi = 0.6 d = 0.41355046; cg = 0.09 + grad^2 = 0.261023985933
//	       chi = 0.5 + (0.1 + 1/sqrt(cg + 0.01)) grad = 1.335728363642
//	Gorge  grad = d/9 = 0.076583419183; g = 0.005865020094; s = 0.615673545328;
//	       o = -0.076583419183
//	carol  grad = -2d/9 = -0.153166838365; g = 0.01 + grad^2 = 0.033460080375;
//	       s = -1.250032662907; o = -0.2 - 2d/9 = -0.353166838365 (lost on aliens)
//	       grad chi = -0.4 d; cg = 0.076010660414; chi = 0.032357981317
//	dave   grad = -d/3; g = 0.072785180843; s = -0.621483824505; o = -0.129750257548
//
// The bias entry: aliens (SideA) lost one game in the cell.
func TestApplyByHand(t *testing.T) {
	m := NS2{BaseSkill: 4.5, Constant: 0.1, Adagrad: 1, Epsilon: 0.01, OffsetRate: 1, BiasPrior: 10}
	var bias BiasTable
	cell, _ := NewBiasKey("aliens", "marines", "ns2_summit", 2)
	other, _ := NewBiasKey("aliens", "marines", "ns2_veil", 2)
	bias.Record(BiasEntry{cell, BiasCell{Wins: 3, Games: 4}})
	bias.Record(BiasEntry{other, BiasCell{Wins: 9, Games: 16}})
	prior := map[Participant]Rating{
		{ID: "alice"}: {Skill: 1, Offset: 0.3, Commander: 0.5, SkillG: 0.04, CommanderG: 0.09, Games: 10},
		{ID: "carol"}: {Skill: -0.5, Offset: -0.2, Commander: 1, SkillG: 0.01, Games: 3},
		{ID: "dave"}:  {Skill: 0.2, Offset: 0.1, SkillG: 0.02, Games: 5},
	}
	o, err := m.Apply(prior, bias, handResult())
	if err != nil {
		t.Fatal(err)
	}
	near(t, "bias F", o.Bias, -math.Log(13.0/8))
	near(t, "p0", o.WinProbability[0], 0.3107492273559301)
	near(t, "p1", o.WinProbability[1], 1-0.3107492273559301)

	type want struct {
		p                  Participant
		team               int
		share, cshare      float64
		s, g, off, chi, cg float64
		games              int
	}
	wants := []want{ // team 0 then team 1; players before bots, then by id
		{Participant{ID: "alice"}, 0, 1.0 / 3, 0.6, 1.739598045569, 0.092785180843, 0.070249742452, 1.335728363642, 0.261023985933, 11},
		{Participant{ID: "Gorge", Bot: true}, 0, 1.0 / 9, 0, 0.615673545328, 0.005865020094, -0.076583419183, 0, 0, 1},
		{Participant{ID: "carol"}, 1, 2.0 / 9, 0.4, -1.250032662907, 0.033460080375, -0.353166838365, 0.032357981317, 0.076010660414, 4},
		{Participant{ID: "dave"}, 1, 1.0 / 3, 0, -0.621483824505, 0.072785180843, -0.129750257548, 0, 0, 6},
	}
	if len(o.Updates) != len(wants) {
		t.Fatalf("%d updates, want %d", len(o.Updates), len(wants))
	}
	for i, w := range wants {
		u := o.Updates[i]
		if u.Participant != w.p || u.Team != w.team {
			t.Fatalf("update %d is %v on team %d, want %v on team %d", i, u.Participant, u.Team, w.p, w.team)
		}
		if u.Before != prior[w.p] {
			t.Errorf("%v: before = %+v, want the prior %+v", w.p, u.Before, prior[w.p])
		}
		// Twelve digits were written down above; compare to 1e-11.
		approx := func(what string, got, want float64) {
			t.Helper()
			if math.Abs(got-want) > 1e-11 {
				t.Errorf("%v %s = %.15g, want %.12f", w.p, what, got, want)
			}
		}
		approx("share", u.Share, w.share)
		approx("command share", u.CommandShare, w.cshare)
		approx("skill", u.After.Skill, w.s)
		approx("skill accumulator", u.After.SkillG, w.g)
		approx("offset", u.After.Offset, w.off)
		approx("commander", u.After.Commander, w.chi)
		approx("commander accumulator", u.After.CommanderG, w.cg)
		if u.After.Games != w.games {
			t.Errorf("%v games = %d, want %d", w.p, u.After.Games, w.games)
		}
	}
	wantBias := BiasEntry{Key: cell, BiasCell: BiasCell{Wins: 0, Games: 1}}
	if o.BiasUpdate != wantBias {
		t.Errorf("bias update = %+v, want %+v", o.BiasUpdate, wantBias)
	}
}

func TestParticipationFollowsTheSeed(t *testing.T) {
	const r = 1200.0
	near(t, "whole round r", Participation(0, r, r), 0.75)
	near(t, "first half of r", Participation(0, r/2, r), 0.5)
	near(t, "second half of r", Participation(r/2, r, r), 0.25)
	near(t, "nothing", Participation(100, 100, r), 0)
	near(t, "no round length", Participation(0, 100, 0), 0)
	// The closed form against a^-j - a^-l computed plainly.
	a := math.Pow(2, 2/r)
	near(t, "arbitrary stay", Participation(37, 911, r), math.Pow(a, -37)-math.Pow(a, -911))
	// A one-millisecond stay keeps its precision.
	near(t, "short stay", Participation(0, 1e-3, r), -math.Expm1(-math.Ln2*2e-3/r))
}

func TestWeight(t *testing.T) {
	if w := (Rating{}).Weight(); w != 50 {
		t.Errorf("a newcomer's weight = %v, want 50", w)
	}
	near(t, "weight of skill 2", Rating{Skill: 2}.Weight(), 100/(1+math.Exp(-1)))
	for _, s := range []float64{-6, -1, 0, 0.5, 3, 8} {
		near(t, "SkillForWeight(Weight)", SkillForWeight(Rating{Skill: s}.Weight()), s)
	}
	if w := (Rating{Skill: 1e6}).Weight(); w != 100 {
		t.Errorf("huge skill weight = %v, want 100", w)
	}
	if w := (Rating{Skill: -1e6}).Weight(); w != 0 || math.IsNaN(w) {
		t.Errorf("tiny skill weight = %v, want 0", w)
	}
}

func TestApplyIgnoresListOrder(t *testing.T) {
	m := DefaultNS2()
	r := handResult()
	prior := map[Participant]Rating{{ID: "alice"}: {Skill: 1.3, SkillG: 0.2}, {ID: "dave"}: {Skill: -0.4}}
	want, err := m.Apply(prior, BiasTable{}, r)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		for _, tm := range r.Teams {
			rng.Shuffle(len(tm.Players), func(i, j int) { tm.Players[i], tm.Players[j] = tm.Players[j], tm.Players[i] })
		}
		got, err := m.Apply(prior, BiasTable{}, r)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffled lists changed the outcome:\n got %+v\nwant %+v", got, want)
		}
	}
}

func TestSwappingTeamsMirrorsTheOutcome(t *testing.T) {
	m := DefaultNS2()
	var bias BiasTable
	k, _ := NewBiasKey("aliens", "marines", "ns2_summit", 2)
	bias.Record(BiasEntry{k, BiasCell{Wins: 30, Games: 40}})
	prior := map[Participant]Rating{{ID: "alice"}: {Skill: 1.3, Offset: 0.4, Commander: 0.7, SkillG: 0.2}, {ID: "carol"}: {Skill: -0.4, Offset: -1}}
	r := handResult()
	a, err := m.Apply(prior, bias, r)
	if err != nil {
		t.Fatal(err)
	}
	r.Teams[0], r.Teams[1] = r.Teams[1], r.Teams[0]
	r.Winner = intp(1)
	b, err := m.Apply(prior, bias, r)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "mirrored p", b.WinProbability[1], a.WinProbability[0])
	after := map[Participant]Rating{}
	for _, u := range b.Updates {
		after[u.Participant] = u.After
	}
	for _, u := range a.Updates {
		v := after[u.Participant]
		near(t, u.Participant.String()+" skill", v.Skill, u.After.Skill)
		near(t, u.Participant.String()+" offset", v.Offset, u.After.Offset)
		near(t, u.Participant.String()+" commander", v.Commander, u.After.Commander)
	}
	// The terms are computed from the mirrored logit: equal to rounding.
	near(t, "scale term", b.BiasUpdate.Terms.Scale, a.BiasUpdate.Terms.Scale)
	near(t, "scale weight", b.BiasUpdate.Terms.ScaleWeight, a.BiasUpdate.Terms.ScaleWeight)
	a.BiasUpdate.Terms, b.BiasUpdate.Terms = Terms{}, Terms{}
	if a.BiasUpdate != b.BiasUpdate {
		t.Errorf("bias updates differ: %+v vs %+v", a.BiasUpdate, b.BiasUpdate)
	}
}

func TestEvenDrawChangesNoSkill(t *testing.T) {
	r := Result{MatchID: "d", GameType: "tdm", Map: "dm-deck17", DurationS: 900, Teams: []Team{
		{Side: "red", Players: []Player{{ID: "a", LeftS: 900}, {ID: "b", LeftS: 900}}},
		{Side: "blue", Players: []Player{{ID: "c", LeftS: 900}, {Bot: "b", LeftS: 900}}},
	}}
	o, err := DefaultNS2().Apply(nil, BiasTable{}, r)
	if err != nil {
		t.Fatal(err)
	}
	if o.WinProbability != [2]float64{0.5, 0.5} {
		t.Errorf("p = %v, want even", o.WinProbability)
	}
	for _, u := range o.Updates {
		if u.After.Skill != 0 || u.After.Offset != 0 || u.After.Games != 1 {
			t.Errorf("%v after an expected draw = %+v, want skill 0 and one game", u.Participant, u.After)
		}
	}
	if got := o.BiasUpdate.BiasCell; got != (BiasCell{Wins: 0.5, Games: 1}) {
		t.Errorf("a draw records %+v, want half a win", got)
	}
	// The player "b" and the bot "b" are two participants.
	if len(o.Updates) != 4 {
		t.Errorf("%d updates, want 4", len(o.Updates))
	}
}

func TestTheBiggerTeamIsTheFavourite(t *testing.T) {
	full := func(ids ...string) []Player {
		var ps []Player
		for _, id := range ids {
			ps = append(ps, Player{ID: id, LeftS: 1200})
		}
		return ps
	}
	r := Result{MatchID: "u", GameType: "ns2", Map: "m", DurationS: 1200, Winner: intp(1), Teams: []Team{
		{Side: "marines", Players: full("a", "b", "c", "d", "e")},
		{Side: "aliens", Players: full("f", "g", "h", "i")},
	}}
	o, err := DefaultNS2().Apply(nil, BiasTable{}, r)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "p(5 beat 4)", o.WinProbability[0], sigmoid(DefaultBaseSkill/9))
	// The four won against the odds: they all go up, the five all go down.
	for _, u := range o.Updates {
		if (u.Team == 0) != (u.After.Skill < 0) {
			t.Errorf("%v on team %d: skill %v", u.Participant, u.Team, u.After.Skill)
		}
	}
}

func TestShiftedTimesDoNotUnderflow(t *testing.T) {
	// Everyone joins six days in, and r is a minute: a^-joined would be 2^-17280 = 0.
	m := DefaultNS2()
	m.RoundS = 60
	start := 6 * 24 * 3600.0
	r := Result{MatchID: "late", GameType: "tdm", Map: "m", DurationS: start + 600, Winner: intp(0), Teams: []Team{
		{Side: "red", Players: []Player{{ID: "a", JoinedS: start, LeftS: start + 600}, {ID: "b", JoinedS: start + 30, LeftS: start + 600}}},
		{Side: "blue", Players: []Player{{ID: "c", JoinedS: start, LeftS: start + 600}}},
	}}
	o, err := m.Apply(nil, BiasTable{}, r)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, u := range o.Updates {
		sum += u.Share
		if u.After.Skill == 0 {
			t.Errorf("%v did not move: share %v", u.Participant, u.Share)
		}
	}
	near(t, "sum of shares", sum, 1)
}

func TestZeroLengthStayMovesNothingButCountsAGame(t *testing.T) {
	r := handResult()
	r.Teams[1].Players = append(r.Teams[1].Players, Player{ID: "erin", JoinedS: 600, LeftS: 600})
	o, err := DefaultNS2().Apply(nil, BiasTable{}, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range o.Updates {
		if u.Participant.ID == "erin" && (u.After != Rating{Games: 1, SeasonGames: 1} || u.Share != 0) {
			t.Errorf("erin: %+v", u)
		}
	}
}

func TestApplyRejectsBadInput(t *testing.T) {
	r := handResult()
	r.Winner = intp(2)
	if _, err := DefaultNS2().Apply(nil, BiasTable{}, r); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("invalid result: err = %v, want invalid", err)
	}
	bad := DefaultNS2()
	bad.Epsilon = 0
	if _, err := bad.Apply(nil, BiasTable{}, handResult()); apperr.CodeOf(err) != apperr.Internal {
		t.Errorf("invalid model: err = %v, want internal", err)
	}
	for _, m := range []NS2{{Epsilon: 1, BiasPrior: math.NaN()}, {Epsilon: 1, BiasPrior: 1, Constant: -1}, {Epsilon: 1, BiasPrior: 1, RoundS: math.Inf(1)}} {
		if m.Validate() == nil {
			t.Errorf("Validate(%+v) = nil", m)
		}
	}
	if err := DefaultNS2().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}
